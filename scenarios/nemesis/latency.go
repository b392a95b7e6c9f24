package nemesis

import (
	"fmt"
	"time"
)

func init() {
	Register("latency", "delay every byte on the targeted links by latency ± jitter (ms resolution)", newLatency,
		linkTargets.with("latency", "jitter", "stream"))
}

// newLatency builds a latency fault. toxiproxy counts in whole
// milliseconds, so sub-millisecond settings are refused rather than rounded
// to nothing silently.
func newLatency(s Spec) (Fault, error) {
	if s.Latency <= 0 {
		return nil, &FieldError{"latency", "must be > 0"}
	}
	if s.Jitter < 0 || s.Jitter > s.Latency {
		return nil, &FieldError{"jitter", "must be between 0 and latency"}
	}
	if s.Latency%time.Millisecond != 0 {
		return nil, &FieldError{"latency", fmt.Sprintf("%v: must be whole milliseconds (toxiproxy's resolution)", s.Latency)}
	}
	if s.Jitter%time.Millisecond != 0 {
		return nil, &FieldError{"jitter", fmt.Sprintf("%v: must be whole milliseconds (toxiproxy's resolution)", s.Jitter)}
	}
	// The value is one-way, per stream, as toxiproxy users expect: with both
	// streams targeted a round trip gains twice the latency.
	return &toxicFault{spec: s, streams: s.streams(), toxic: func() Toxic {
		return Toxic{Type: "latency", Attributes: map[string]any{
			"latency": s.Latency.Milliseconds(), "jitter": s.Jitter.Milliseconds()}}
	}}, nil
}
