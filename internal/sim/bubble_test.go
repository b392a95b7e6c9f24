package sim

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestDoIsVirtual: an hour of sleeps in a bubble costs no real hour, and
// bubbles run side by side each on its own clock.
func TestDoIsVirtual(t *testing.T) {
	start := time.Now()
	var wg sync.WaitGroup
	got := make([]time.Duration, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Do(func() {
				t0 := time.Now()
				time.Sleep(time.Duration(i+1) * time.Hour)
				got[i] = time.Since(t0)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, d := range got {
		if d != time.Duration(i+1)*time.Hour {
			t.Errorf("bubble %d slept %v, want %v", i, d, time.Duration(i+1)*time.Hour)
		}
	}
	if real := time.Since(start); real > time.Minute {
		t.Errorf("four bubbles took %v of real time", real)
	}
}

// TestDoLeak: a goroutine left blocked forever is the caller's error, not
// a crash of the program.
func TestDoLeak(t *testing.T) {
	err := Do(func() {
		c := make(chan int)
		go func() { <-c }()
	})
	if !errors.Is(err, ErrBubble) {
		t.Fatalf("Do with a leaked goroutine: %v, want ErrBubble", err)
	}
	if err := Do(func() { time.Sleep(time.Second) }); err != nil {
		t.Fatalf("Do after a failed bubble: %v", err)
	}
}
