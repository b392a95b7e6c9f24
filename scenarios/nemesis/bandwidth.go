package nemesis

func init() {
	Register("bandwidth", "limit the targeted links to rate KB/s", linkTargets, func(s Spec, p *BandwidthParams) (Fault, error) {
		return &toxicFault{spec: s, streams: streams(p.Stream), toxic: func() Toxic {
			return Toxic{Type: "bandwidth", Attributes: map[string]any{"rate": p.Rate}}
		}}, nil
	})
}

// BandwidthParams are bandwidth's parameters.
type BandwidthParams struct {
	// Rate is the links' limit in KB/s.
	Rate int64 `yaml:"rate"`
	// Stream is upstream, downstream or both (the default).
	Stream string `yaml:"stream"`
}

// Validate wants a rate.
func (p *BandwidthParams) Validate() error {
	if err := checkStream(p.Stream); err != nil {
		return err
	}
	if p.Rate <= 0 {
		return &FieldError{"rate", "must be > 0 (KB/s)"}
	}
	return nil
}
