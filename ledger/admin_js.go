//go:build js && wasm

package ledger

import (
	"context"

	"github.com/edge-orders/edge-orders/intake"
	"github.com/edge-orders/edge-orders/internal/errs"
	"github.com/edge-orders/edge-orders/internal/uuid"
)

// scan reads the rows without an outcome after the key after, in key
// order, through the partial index entries_open, which holds only them:
// stored outcomes, most of the rows, are never read.
func (t sqlTable) scan(after string, limit int) ([]row, int) {
	rows := t.query(`SELECT key, `+rowColumns+` FROM entries INDEXED BY entries_open
		WHERE key > ? AND receipt IS NULL ORDER BY key LIMIT ?`, after, limit)
	out := make([]row, len(rows.Values))
	for i := range out {
		out[i] = rowAt(rows, i, rows.Value(i, "key").Str)
	}
	return out, rows.RowsRead
}

// List implements intake.AdminStore: each client's shards in turn, one
// list call per object, at most maxListCalls a page.
func (c *Client) List(ctx context.Context, q intake.ListQuery) (intake.ListPage, error) {
	return listShards(ctx, q, c.shards, func(ctx context.Context, client string, n int, after string, limit int) ([]intake.Listed, string, error) {
		name := shardName(client, n)
		arg := encodeList(client, after, q.States, limit)
		var res []byte
		err := retryOnce(func() (err error) {
			res, err = c.callObject(ctx, name, "list", arg)
			return err
		})
		if err != nil {
			return nil, "", errs.Prefix("ledger: list "+name, err)
		}
		return decodeListed(res)
	})
}

// Purge implements intake.AdminStore.
func (c *Client) Purge(ctx context.Context, key intake.Key, orderID string) (intake.Record, error) {
	// One token for the call and its retry (Object.Purge).
	res, err := c.call(ctx, key, "purge", encodePurge(key, uuid.New(), orderID))
	if err != nil {
		return intake.Record{}, err
	}
	return decodeRecord(res)
}
