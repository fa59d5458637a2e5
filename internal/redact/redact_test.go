package redact

import "testing"

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://agent:8000/run", "http://agent:8000/run"},
		{"http://agent:8000/run?api_key=s3cret", "http://agent:8000/run?redacted"},
		{"http://agent/run?", "http://agent/run?redacted"},
		{"http://agent/run#frag", "http://agent/run"},
		{"http://agent/run?a=1#frag", "http://agent/run?redacted"},
		{"http://user:pa55@agent:8000/run", "http://redacted@agent:8000/run"},
		{"http://user:p@ss@agent/x?t=1", "http://redacted@agent/x?redacted"},
		{"http://agent/path@with-at", "http://agent/path@with-at"},
		{"", ""},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"HTTP/1.1 2OO OK\r\n", 64, `"HTTP/1.1 2OO OK\r\n"`},
		{"abcdef", 3, `"abc"…`},
		{"a\x00\xffb", 8, `"a\x00\xffb"`},
		{"", 8, `""`},
	} {
		if got := Excerpt([]byte(c.in), c.n); got != c.want {
			t.Errorf("Excerpt(%q, %d) = %s, want %s", c.in, c.n, got, c.want)
		}
	}
}
