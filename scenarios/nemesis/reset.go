package nemesis

func init() {
	Register("reset", "reset (RST) every connection on the targeted links as data arrives", func(s Spec) (Fault, error) {
		return &toxicFault{spec: s, streams: s.streams(), toxic: func() Toxic {
			return Toxic{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}
		}}, nil
	}, linkTargets.with("stream"))
}
