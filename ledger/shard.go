package ledger

import (
	"hash/fnv"

	"github.com/edge-orders/edge-orders/intake"
)

// ObjectName is the name of the ledger object that holds key, one of
// shards objects per client: "<client>/<n>", n = FNV-1a(id) mod shards
// ("open/<n>" for the open Worker, whose client is empty: config refuses
// a client of that id in ledger mode, whose objects, and whose key k, would
// be the open Worker's, and its key open:k).
//
// Each client's keys spread over a fixed set of objects: no object serves
// every client, one client's load never lands on another's objects, and a
// new key never creates a new object (the first use of a name is slow in
// production). Changing shards moves keys to other objects; see docs/operating.md
// before changing LEDGER_SHARDS.
func ObjectName(key intake.Key, shards int) string {
	h := fnv.New32a()
	h.Write([]byte(key.ID))
	return shardName(key.Client, int(h.Sum32()%uint32(shards)))
}
