package kv_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/kv"
	"github.com/edge-orders/edge-orders/kv/kvtest"
)

// TestStoreWritesTheReferencesLayout checks an order the Service stored in
// the reference's layout: result:<key> holds exactly the receipt, its
// metadata exactly the fingerprint, and the claim under pending:<key>, the
// reference's "1" with the fingerprint beside it, is left to expire with
// its lease: no delete.
func TestStoreWritesTheReferencesLayout(t *testing.T) {
	s := newRecordedStore()
	out, err := s.service().Submit(context.Background(), openKey("k"), []byte(validBody), "")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := s.stored(t, "result:k")
	if !ok {
		t.Fatalf("result:k missing")
	}
	if got, want := string(e.Metadata), `{"fingerprint":"`+fingerprint(t, validBody)+`"}`; got != want {
		t.Errorf("metadata = %s, want %s", got, want)
	}
	if e.Value != string(out.Receipt) {
		t.Errorf("result:k = %s, want exactly the receipt %s", e.Value, out.Receipt)
	}
	// The body is parsed before the claim is written, so the claim names
	// its order too, in metadata the reference never reads.
	claims := s.rec.Filter(kvtest.OpPut, "pending:k")
	if len(claims) != 1 || claims[0].Entry.Value != "1" || string(claims[0].Entry.Metadata) != string(e.Metadata) {
		t.Errorf("claim Puts = %+v, want one of the reference's marker \"1\" with only the fingerprint in metadata", claims)
	}
	if _, ok := s.stored(t, "pending:k"); !ok {
		t.Errorf("pending:k gone, want the claim left to expire")
	}
	if got := s.rec.Count(kvtest.OpDelete, ""); got != 0 {
		t.Errorf("Deletes = %d, want 0", got)
	}
}

// TestReceiptMetadataHoldsTheFingerprint checks the fingerprint's round
// trip through a receipt's metadata, and that metadata that is not ours
// means no fingerprint.
func TestReceiptMetadataHoldsTheFingerprint(t *testing.T) {
	ctx := context.Background()
	t.Run("fingerprints round trip", func(t *testing.T) {
		for _, fp := range []string{
			fingerprint(t, validBody),
			`a"b\c`,
			"é\u2028<&>",
		} {
			mem := kv.NewMemoryNamespace()
			s := kv.NewStore(mem, nil)
			r := intake.Result{Body: []byte(`{"orderId":"x"}`), Fingerprint: fp, TTL: time.Hour}
			if err := s.Commit(ctx, openKey("k"), intake.Claim{}, r); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			rec, err := s.Lookup(ctx, openKey("k"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if rec.State != intake.Stored || rec.Fingerprint != fp || !bytes.Equal(rec.Body, r.Body) {
				t.Errorf("Lookup after storing fingerprint %q = %+v, want Stored with the fingerprint and receipt", fp, rec)
			}
		}
	})
	t.Run("an empty fingerprint is stored without metadata", func(t *testing.T) {
		mem := kv.NewMemoryNamespace()
		s := kv.NewStore(mem, nil)
		if err := s.Commit(ctx, openKey("k"), intake.Claim{}, intake.Result{Body: []byte(`{}`), TTL: time.Hour}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		e, err := mem.Get(ctx, "result:k")
		if err != nil || e.Metadata != nil {
			t.Errorf("result:k metadata = %s, %v; want none, as the reference stores receipts", e.Metadata, err)
		}
	})

	tests := []struct {
		name     string
		metadata string // "" stores none
		want     string
	}{
		{"no metadata is no fingerprint", "", ""},
		{"our metadata is the fingerprint", `{"fingerprint":"abc"}`, "abc"},
		{"spacing and escapes are read", `{ "fingerprint" : "a\u0062c" }`, "abc"},
		{"other members are ignored", `{"by":"other","fingerprint":"abc"}`, "abc"},
		{"a number is no fingerprint", `{"fingerprint":1}`, ""},
		{"null is no fingerprint", `{"fingerprint":null}`, ""},
		{"another member is no fingerprint", `{"fp":"abc"}`, ""},
		{"a bare string is no fingerprint", `"abc"`, ""},
		{"an array is no fingerprint", `["fingerprint","abc"]`, ""},
		{"an empty object is no fingerprint", `{}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := kv.NewMemoryNamespace()
			e := kv.Entry{Value: `{"orderId":"r1"}`}
			if tc.metadata != "" {
				e.Metadata = []byte(tc.metadata)
			}
			if err := mem.Put(ctx, "result:k", e, kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			rec, err := kv.NewStore(mem, nil).Lookup(ctx, openKey("k"))
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if rec.State != intake.Stored || rec.Fingerprint != tc.want || string(rec.Body) != e.Value {
				t.Errorf("Lookup = %+v, want Stored %s with fingerprint %q", rec, e.Value, tc.want)
			}
		})
	}
}
