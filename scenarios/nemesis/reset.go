package nemesis

func init() {
	Register("reset", "reset (RST) every connection on the targeted links as data arrives", func(s Spec) (Fault, error) {
		return &toxicFault{spec: s, streams: s.streams(), toxic: rejectToxic}, nil
	}, linkTargets.with("stream"))
}

// rejectToxic resets (RST) a connection as soon as data arrives on it.
func rejectToxic() Toxic {
	return Toxic{Type: "reset_peer", Attributes: map[string]any{"timeout": 0}}
}
