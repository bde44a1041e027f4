package kv_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/kv"
)

func TestCheckTTL(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		wantErr bool
	}{
		{"zero is no expiration", 0, false},
		{"KV's minimum is accepted", kv.MinTTL, false},
		{"a fraction over the minimum is accepted", kv.MinTTL + 900*time.Millisecond, false},
		{"a day is accepted", 24 * time.Hour, false},
		{"one second under the minimum is refused", kv.MinTTL - time.Second, true},
		{"a fraction under the minimum is refused", kv.MinTTL - time.Millisecond, true},
		{"the reference's thirty seconds is refused", 30 * time.Second, true},
		{"one nanosecond is refused", time.Nanosecond, true},
		{"a negative TTL is refused", -kv.MinTTL, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := kv.CheckTTL(tc.ttl)
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("CheckTTL(%v) = %v, want error %v", tc.ttl, err, tc.wantErr)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, kv.ErrInvalid) {
				t.Errorf("CheckTTL(%v) = %v, want it to wrap ErrInvalid", tc.ttl, err)
			}
			// The message is read by whoever set the TTL: it names KV's minimum.
			if want := "minimum expiration TTL of 60 seconds"; !strings.Contains(err.Error(), want) {
				t.Errorf("CheckTTL(%v) = %q, want it to contain %q", tc.ttl, err, want)
			}
		})
	}
}
