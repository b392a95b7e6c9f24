package nemesis

import (
	"errors"
	"testing"
	"time"
)

// TestParamText: a fault's description carries every parameter its kind
// reads (rate, stream and direction too), in its struct's order, and none
// it does not read.
func TestParamText(t *testing.T) {
	for _, tc := range []struct {
		s    Spec
		want string
	}{
		{Spec{Kind: "latency", Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Stream: "upstream"}, " latency=20ms jitter=5ms stream=upstream"},
		{Spec{Kind: "bandwidth", Rate: 100, Stream: "downstream"}, " rate=100 stream=downstream"},
		{Spec{Kind: "partition", Direction: "to-server", Latency: 5 * time.Millisecond}, " direction=to-server"},
		{Spec{Kind: "client-clock", Offset: -2 * time.Second, Drift: 0.01}, " offset=-2s drift=0.01"},
		{Spec{Kind: "pause"}, ""},
		{Spec{Kind: "no-such-kind", Latency: time.Second}, ""},
	} {
		if got := tc.s.ParamText(); got != tc.want {
			t.Errorf("%s: ParamText %q, want %q", tc.s.Kind, got, tc.want)
		}
	}
}

// TestNewTakesTheKindsStruct: New builds a fault from the kind's own
// parameter struct, validated as Build validates a spec's, and refuses
// another kind's struct.
func TestNewTakesTheKindsStruct(t *testing.T) {
	if _, err := New(Spec{Kind: "latency"}, &LatencyParams{Latency: 10 * time.Millisecond}); err != nil {
		t.Errorf("a valid latency: %v", err)
	}
	var fe *FieldError
	if _, err := New(Spec{Kind: "latency"}, &LatencyParams{Latency: 10*time.Millisecond + time.Microsecond}); !errors.As(err, &fe) || fe.Field != "latency" {
		t.Errorf("a latency finer than a millisecond: %v, want a latency FieldError", err)
	}
	if _, err := New(Spec{Kind: "latency"}, &BandwidthParams{Rate: 1}); err == nil {
		t.Error("latency built from bandwidth's parameters")
	}
	if _, err := New(Spec{Kind: "latency", At: -time.Second}, &LatencyParams{Latency: 10 * time.Millisecond}); !errors.As(err, &fe) || fe.Field != "at" {
		t.Errorf("a negative at: %v, want an at FieldError", err)
	}
}
