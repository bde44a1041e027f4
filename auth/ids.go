package auth

import "slices"

// IDs returns the client ids, sorted.
func (c *Clients) IDs() []string {
	ids := make([]string, len(c.clients))
	for i, cl := range c.clients {
		ids[i] = cl.id
	}
	slices.Sort(ids)
	return ids
}

// Has reports whether id is one of the clients'.
func (c *Clients) Has(id string) bool {
	for _, cl := range c.clients {
		if cl.id == id {
			return true
		}
	}
	return false
}

// SharesToken reports whether a token of c is also one of other's: a
// token must never open two sets, such as the clients' and the admins'.
func (c *Clients) SharesToken(other *Clients) bool {
	for _, a := range c.clients {
		for _, b := range other.clients {
			if a.digest == b.digest {
				return true
			}
		}
	}
	return false
}
