//go:build js && wasm

package ledger

import "github.com/edge-orders/edge-orders/internal/jsjson"

// EncodeList is a list call's argument, for tests that call an object.
var EncodeList = encodeList

// ListRowsRead is the rows a list call's answer says it read.
func ListRowsRead(answer []byte) int {
	o, err := jsjson.Parse(answer, mRowsRead)
	if err != nil {
		return -1
	}
	return int(o.Get(mRowsRead).Num)
}
