package httpapi

import (
	"strconv"
	"strings"
)

// rateCaller is whom the open Worker's rate limit counts a request from
// addr (CF-Connecting-IP) against: an IPv4 address by itself, and an IPv6
// address by its /64, since one subscriber or host usually holds a whole
// /64 and would otherwise get a budget per address. An IPv4-mapped IPv6
// address counts as its IPv4 address, and one that does not parse as it
// is written. A request without the header (one through a service
// binding) counts as "": every such caller shares one budget.
func rateCaller(addr string) string {
	ip, ok := parseIPv6(addr)
	switch {
	case !ok:
		return addr
	case string(ip[:12]) == "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff":
		b := strconv.AppendUint(nil, uint64(ip[12]), 10)
		for _, octet := range ip[13:] {
			b = strconv.AppendUint(append(b, '.'), uint64(octet), 10)
		}
		return string(b)
	}
	b := make([]byte, 0, len("ffff:ffff:ffff:ffff::/64"))
	for i := 0; i < 8; i += 2 {
		if i > 0 {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, uint64(ip[i])<<8|uint64(ip[i+1]), 16)
	}
	return string(append(b, "::/64"...))
}

// parseIPv6 reads s as net/netip.ParseAddr reads an IPv6 address (hex
// fields, one "::", a dotted IPv4 address in the last 32 bits, a zone
// after "%", which it drops), accepting and refusing the same strings:
// net/netip itself would add about 150 KB to the Worker's wasm. A string
// whose first '.' or ':' is not a ':' is no IPv6 address.
func parseIPv6(s string) (ip [16]byte, ok bool) {
	if i := strings.IndexAny(s, ".:%"); i < 0 || s[i] != ':' {
		return ip, false
	}
	if i := strings.IndexByte(s, '%'); i >= 0 {
		if i == len(s)-1 {
			return ip, false // an empty zone
		}
		s = s[:i]
	}
	ellipsis := -1 // where "::" stands in ip
	if strings.HasPrefix(s, "::") {
		ellipsis, s = 0, s[2:]
		if s == "" {
			return ip, true
		}
	}
	i := 0
	for i < 16 {
		field, digits := uint32(0), 0
		for ; digits < len(s); digits++ {
			d := hexDigit(s[digits])
			if d < 0 {
				break
			}
			if digits == 4 {
				return ip, false
			}
			field = field<<4 | uint32(d)
		}
		if digits == 0 {
			return ip, false
		}
		if digits < len(s) && s[digits] == '.' {
			if (ellipsis < 0 && i != 12) || i+4 > 16 || !parseIPv4(s, ip[i:i+4]) {
				return ip, false
			}
			i, s = i+4, ""
			break
		}
		ip[i], ip[i+1] = byte(field>>8), byte(field)
		i, s = i+2, s[digits:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return ip, false
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return ip, false
			}
			ellipsis, s = i, s[1:]
			if s == "" {
				break
			}
		}
	}
	switch {
	case s != "":
		return ip, false
	case i < 16 && ellipsis < 0, i == 16 && ellipsis >= 0:
		return ip, false // too short, or a "::" that stands for nothing
	case i < 16:
		n := 16 - i
		copy(ip[ellipsis+n:], ip[ellipsis:i])
		clear(ip[ellipsis : ellipsis+n])
	}
	return ip, true
}

// parseIPv4 reads s, four decimal octets without leading zeros, into out.
func parseIPv4(s string, out []byte) bool {
	fields := strings.Split(s, ".")
	if len(fields) != 4 {
		return false
	}
	for i, f := range fields {
		n, err := strconv.ParseUint(f, 10, 8)
		if err != nil || f[0] < '0' || f[0] > '9' || (len(f) > 1 && f[0] == '0') {
			return false
		}
		out[i] = byte(n)
	}
	return true
}

// hexDigit is c's value as a hex digit, or -1.
func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
