package storetest

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/order"
)

// AdminStore is a Store with the operator's capability.
type AdminStore interface {
	intake.Store
	intake.AdminStore
}

// RunAdmin checks s's AdminStore: a purge deletes a final outcome and
// nothing else, a listing finds the keys that need attention, in their
// states, page by page, and only the clients asked for; and an operator's
// claim (Claim.By) takes over an unresolved key that a settler's
// leaves alone. Keys it uses start with prefix; its clients are its own,
// new on every run, so a listing sees only this run's keys.
func RunAdmin(t *testing.T, s AdminStore, prefix string, opts Options) {
	su := newSuite(s, prefix, opts)
	a := &adminSuite{suite: su, admin: s}
	a.purges(t)
	a.lists(t)
	a.resolving(t)
}

type adminSuite struct {
	*suite
	admin intake.AdminStore
	// clients counts the clients newClient has made.
	clients int
}

// newClient returns a client id no check has used, in this run or any.
func (a *adminSuite) newClient() string {
	a.clients++
	return "adm" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(a.clients)
}

// adminOrder is the order of the claims here, kept with them as a
// gateway's claims keep theirs.
var adminOrder = order.Order{Symbol: "MSFT", Side: order.Buy, Quantity: 100}

// placed is a claim for adminOrder that may reach a gateway.
func (a *adminSuite) placed(token, orderID string) intake.Claim {
	c := a.sent(token, adminOrder.Fingerprint(), orderID)
	c.Order = adminOrder
	return c
}

// openKey leaves key Open with orderID, unresolved or not.
func (a *adminSuite) openKey(t *testing.T, key intake.Key, orderID string, unresolved bool) {
	t.Helper()
	c := a.placed("open-"+orderID, orderID)
	a.mustTake(t, key, c, intake.EventClaim)
	c.Stage, c.Attempts = intake.StageSent, 3
	if unresolved {
		c.GiveUp = intake.GivenUp
	} else {
		c.NextAttempt = a.now().Add(time.Minute)
	}
	if err := a.store.Release(context.Background(), key, c); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// storeKey stores a receipt under key.
func (a *adminSuite) storeKey(t *testing.T, key intake.Key, body string) {
	t.Helper()
	c := a.placed("stored", "order-s")
	a.mustTake(t, key, c, intake.EventClaim)
	a.mustCommit(t, key, c, intake.Result{Body: []byte(body), Fingerprint: adminOrder.Fingerprint(), TTL: time.Hour})
	// Then released, as the Service does over a Store whose claim stays
	// beside its outcome (KV's, listed until it goes).
	if err := a.store.Release(context.Background(), key, c); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func (a *adminSuite) mustPurge(t *testing.T, key intake.Key, want intake.State) intake.Record {
	t.Helper()
	rec, err := a.admin.Purge(context.Background(), key, "")
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if rec.State != want {
		t.Fatalf("Purge found state %v, want %v", rec.State, want)
	}
	return rec
}

// purges checks Purge: it deletes a stored outcome, with any claim beside
// it, and leaves every other key as it was.
func (a *adminSuite) purges(t *testing.T) {
	t.Run("purge deletes a stored outcome and frees the key", func(t *testing.T) {
		key := a.newKey()
		a.storeKey(t, key, `{"r":1}`)
		rec := a.mustPurge(t, key, intake.Stored)
		if string(rec.Body) != `{"r":1}` {
			t.Errorf("Purge returned body %q, want the stored one", rec.Body)
		}
		a.mustLookup(t, key, intake.Absent)
		a.mustTake(t, key, a.placed("new", "order-new"), intake.EventClaim)
	})

	t.Run("purge with another order id leaves the outcome", func(t *testing.T) {
		key := a.newKey()
		a.storeKey(t, key, `{"orderId":"order-s"}`)
		if rec, err := a.admin.Purge(context.Background(), key, "order-other"); err != nil || rec.State != intake.Stored {
			t.Fatalf("Purge(order-other) = %v, %v; want the outcome found", rec.State, err)
		}
		a.mustLookup(t, key, intake.Stored)
		if rec, err := a.admin.Purge(context.Background(), key, "order-s"); err != nil || rec.State != intake.Stored {
			t.Fatalf("Purge(order-s) = %v, %v; want the outcome purged", rec.State, err)
		}
		a.mustLookup(t, key, intake.Absent)
	})

	t.Run("purge leaves an open key open", func(t *testing.T) {
		key := a.newKey()
		a.openKey(t, key, "order-1", false)
		a.mustPurge(t, key, intake.Open)
		wantOrderID(t, a.mustLookup(t, key, intake.Open), "order-1")
	})

	t.Run("purge leaves an unresolved key open", func(t *testing.T) {
		key := a.newKey()
		a.openKey(t, key, "order-1", true)
		a.mustPurge(t, key, intake.Open)
		if rec := a.mustLookup(t, key, intake.Open); rec.GiveUp != intake.GivenUp {
			t.Errorf("after Purge the key is no longer unresolved")
		}
	})

	t.Run("purge leaves a live claim holding its key", func(t *testing.T) {
		key := a.newKey()
		a.mustTake(t, key, a.placed("a", "order-1"), intake.EventClaim)
		a.mustPurge(t, key, intake.Held)
		a.mustLookup(t, key, intake.Held)
	})

	t.Run("purge of an absent key finds nothing", func(t *testing.T) {
		a.mustPurge(t, a.newKey(), intake.Absent)
	})
}

// listAll lists q page by page, failing t if the pages do not end.
func (a *adminSuite) listAll(t *testing.T, q intake.ListQuery) []intake.Listed {
	t.Helper()
	var all []intake.Listed
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("the listing went on past %d pages", pages)
		}
		page, err := a.admin.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Keys) > q.Limit {
			t.Fatalf("a page of %d keys, over its limit of %d", len(page.Keys), q.Limit)
		}
		all = append(all, page.Keys...)
		if page.Cursor == "" {
			return all
		}
		q.Cursor = page.Cursor
	}
}

// ids are the key ids of listed, sorted.
func ids(listed []intake.Listed) []string {
	var ids []string
	for _, l := range listed {
		ids = append(ids, l.Key.ID)
	}
	slices.Sort(ids)
	return ids
}

// lists checks List over one client's keys in every state.
func (a *adminSuite) lists(t *testing.T) {
	client, other := a.newClient(), a.newClient()
	key := func(name string) intake.Key { return intake.Key{Client: client, ID: a.prefix + name} }
	a.openKey(t, key("unknown"), "order-u", false)
	a.openKey(t, key("unresolved"), "order-x", true)
	a.mustTake(t, key("held"), a.placed("h", "order-h"), intake.EventClaim)
	a.storeKey(t, key("stored"), `{"r":1}`)
	a.openKey(t, intake.Key{Client: other, ID: a.prefix + "unknown"}, "order-o", false)

	t.Run("a listing finds each key in its state, and no final outcome", func(t *testing.T) {
		got := a.listAll(t, intake.ListQuery{Clients: []string{client}, States: intake.AnyAttention, Limit: 10})
		want := map[string]intake.Attention{a.prefix + "unknown": intake.Unknown, a.prefix + "unresolved": intake.Unresolved, a.prefix + "held": intake.InProgress}
		if len(got) != len(want) {
			t.Fatalf("listed %v, want %d keys", ids(got), len(want))
		}
		for _, l := range got {
			if l.Key.Client != client {
				t.Errorf("listed %q of client %q, want client %q", l.Key.ID, l.Key.Client, client)
			}
			if state := intake.AttentionOf(l.Record); state != want[l.Key.ID] {
				t.Errorf("listed %q in state %d, want %d", l.Key.ID, state, want[l.Key.ID])
			}
		}
		for _, l := range got {
			if l.Key.ID == a.prefix+"unknown" {
				if l.Record.OrderID != "order-u" || !l.Record.AcceptedAt.Equal(accepted) || l.Record.Attempts != 3 ||
					!l.Record.HasOrder || l.Record.Order != adminOrder || l.Record.NextAttempt.IsZero() {
					t.Errorf("listed the unknown key as %+v, want order-u, its order, 3 attempts and a next attempt", l.Record)
				}
			}
		}
	})

	t.Run("a listing keeps to the states asked for", func(t *testing.T) {
		got := a.listAll(t, intake.ListQuery{Clients: []string{client}, States: intake.Unresolved, Limit: 10})
		if len(got) != 1 || got[0].Key.ID != a.prefix+"unresolved" {
			t.Fatalf("listed %v, want only the unresolved key", ids(got))
		}
	})

	t.Run("pages of one key list every key once", func(t *testing.T) {
		got := a.listAll(t, intake.ListQuery{Clients: []string{client}, States: intake.AnyAttention, Limit: 1})
		want := []string{a.prefix + "held", a.prefix + "unknown", a.prefix + "unresolved"}
		if !slices.Equal(ids(got), want) {
			t.Fatalf("listed %v, want %v", ids(got), want)
		}
	})

	t.Run("a listing of two clients lists both", func(t *testing.T) {
		got := a.listAll(t, intake.ListQuery{Clients: []string{client, other}, States: intake.Unknown, Limit: 10})
		if len(got) != 2 {
			t.Fatalf("listed %v, want the unknown key of each client", ids(got))
		}
	})

	t.Run("a cursor from elsewhere is refused", func(t *testing.T) {
		_, err := a.admin.List(context.Background(), intake.ListQuery{Clients: []string{client}, States: intake.AnyAttention, Limit: 10, Cursor: "not a cursor!"})
		if !errors.Is(err, intake.ErrBadCursor) {
			t.Fatalf("List with a made-up cursor: %v, want ErrBadCursor", err)
		}
	})

	// A cursor goes on with the listing that handed it out: another
	// client's keys would go on from a name of this one's, and skip what
	// that page holds without a word (found by a review).
	t.Run("a cursor of another client's listing is refused", func(t *testing.T) {
		page, err := a.admin.List(context.Background(), intake.ListQuery{Clients: []string{client}, States: intake.AnyAttention, Limit: 1})
		if err != nil || page.Cursor == "" {
			t.Fatalf("the first page = %+v, %v; want a cursor", page, err)
		}
		_, err = a.admin.List(context.Background(), intake.ListQuery{Clients: []string{other}, States: intake.AnyAttention, Limit: 10, Cursor: page.Cursor})
		if !errors.Is(err, intake.ErrBadCursor) {
			t.Fatalf("List of %s with %s's cursor: %v, want ErrBadCursor", other, client, err)
		}
	})
}

// resolving checks the operator's claim: it takes over an unresolved key,
// which the settler's claim leaves alone, and claims nothing else.
func (a *adminSuite) resolving(t *testing.T) {
	settler := func(token string) intake.Claim {
		return intake.Claim{Token: token, Lease: time.Minute, By: intake.RoleSettler, KeepUntil: a.now().Add(time.Hour)}
	}
	operator := func(token string) intake.Claim {
		c := settler(token)
		c.By = intake.RoleResolver
		return c
	}

	t.Run("an operator's claim takes over an unresolved key with its order", func(t *testing.T) {
		key := a.newKey()
		a.openKey(t, key, "order-1", true)
		a.mustBegin(t, key, settler("s"), intake.Open)
		rec := a.mustTake(t, key, operator("op"), intake.EventTakeOver)
		wantOrderID(t, rec, "order-1")
		if !rec.HasOrder || rec.Order != adminOrder {
			t.Errorf("taken over with order %+v (has %v), want %+v", rec.Order, rec.HasOrder, adminOrder)
		}
	})

	t.Run("an operator's claim takes over an unknown key", func(t *testing.T) {
		key := a.newKey()
		a.openKey(t, key, "order-1", false)
		wantOrderID(t, a.mustTake(t, key, operator("op"), intake.EventTakeOver), "order-1")
	})

	t.Run("an operator's claim claims no absent key", func(t *testing.T) {
		key := a.newKey()
		a.mustBegin(t, key, operator("op"), intake.Absent)
		a.mustLookup(t, key, intake.Absent)
	})

	t.Run("an operator's claim leaves a stored outcome alone", func(t *testing.T) {
		key := a.newKey()
		a.storeKey(t, key, `{"r":1}`)
		a.mustBegin(t, key, operator("op"), intake.Stored)
	})
}
