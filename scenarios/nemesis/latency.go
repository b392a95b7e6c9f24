package nemesis

import (
	"fmt"
	"time"
)

func init() {
	Register("latency", "delay every byte on the targeted links by latency ± jitter (ms resolution)", linkTargets, newLatency)
}

// LatencyParams are latency's parameters.
type LatencyParams struct {
	// Latency is the one-way delay, per stream.
	Latency time.Duration `yaml:"latency"`
	// Jitter varies it by up to ± Jitter.
	Jitter time.Duration `yaml:"jitter"`
	// Stream is upstream, downstream or both (the default).
	Stream string `yaml:"stream"`
}

// Validate refuses sub-millisecond settings rather than rounding them to
// nothing silently: toxiproxy counts in whole milliseconds.
func (p *LatencyParams) Validate() error {
	if err := checkStream(p.Stream); err != nil {
		return err
	}
	if p.Latency <= 0 {
		return &FieldError{"latency", "must be > 0"}
	}
	if p.Jitter < 0 || p.Jitter > p.Latency {
		return &FieldError{"jitter", "must be between 0 and latency"}
	}
	if p.Latency%time.Millisecond != 0 {
		return &FieldError{"latency", fmt.Sprintf("%v: must be whole milliseconds (toxiproxy's resolution)", p.Latency)}
	}
	if p.Jitter%time.Millisecond != 0 {
		return &FieldError{"jitter", fmt.Sprintf("%v: must be whole milliseconds (toxiproxy's resolution)", p.Jitter)}
	}
	return nil
}

// newLatency builds a latency fault.
func newLatency(s Spec, p *LatencyParams) (Fault, error) {
	// The value is one-way, per stream, as toxiproxy users expect: with both
	// streams targeted a round trip gains twice the latency.
	return &toxicFault{spec: s, streams: streams(p.Stream), toxic: func() Toxic {
		return Toxic{Type: "latency", Attributes: map[string]any{
			"latency": p.Latency.Milliseconds(), "jitter": p.Jitter.Milliseconds()}}
	}}, nil
}
