package nemesis

func init() {
	Register("reset", "reset (RST) every connection on the targeted links as data arrives", linkTargets, func(s Spec, p *ResetParams) (Fault, error) {
		return &toxicFault{spec: s, streams: streams(p.Stream), toxic: func() Toxic {
			return Toxic{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}
		}}, nil
	})
}

// ResetParams are reset's parameters.
type ResetParams struct {
	// Stream is upstream, downstream or both (the default).
	Stream string `yaml:"stream"`
}

// Validate checks the stream.
func (p *ResetParams) Validate() error { return checkStream(p.Stream) }
