// Package redact keeps secrets a URL may carry, and a peer's bytes beyond
// a short excerpt, out of the logs.
package redact

import (
	"strconv"
	"strings"
)

// URL returns u as a log line names it: without the query, the fragment or
// the userinfo, which may hold a token or a password (an agent's
// "?api_key=", an Upstream of "http://user:pass@host"). What was left out
// is marked, so that a reader knows the request had it: "?redacted",
// "redacted@". A u without any of them is returned as it is.
func URL(u string) string {
	var marks string
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		if u[i] == '?' {
			marks = "?redacted"
		}
		u = u[:i]
	}
	if scheme := strings.Index(u, "://"); scheme >= 0 {
		authority := u[scheme+3:]
		if slash := strings.IndexByte(authority, '/'); slash >= 0 {
			authority = authority[:slash]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			u = u[:scheme+3] + "redacted@" + u[scheme+3+at+1:]
		}
	}
	return u + marks
}

// Excerpt returns the first n bytes of b at most, quoted and escaped as Go
// does (%q: control bytes and invalid UTF-8 escaped, so that they cannot
// forge a log line), with "…" after the quote when b was longer. It is
// what a log line may show of bytes a peer sent that could not be read.
func Excerpt(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:n])) + "…"
}
