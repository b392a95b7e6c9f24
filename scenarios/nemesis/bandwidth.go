package nemesis

func init() {
	Register("bandwidth", "limit the targeted links to rate KB/s", func(s Spec) (Fault, error) {
		if s.Rate <= 0 {
			return nil, &FieldError{"rate", "must be > 0 (KB/s)"}
		}
		return &toxicFault{spec: s, streams: s.streams(), toxic: func() Toxic {
			return Toxic{Type: "bandwidth", Attributes: map[string]any{"rate": s.Rate}}
		}}, nil
	}, linkTargets.with("rate", "stream"))
}
