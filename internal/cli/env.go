package cli

import (
	"flag"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// envPrefix begins every variable that sets a serve flag (EnvName).
const envPrefix = "AGUI_RELAY_"

// unknownVar is an AGUI_RELAY_ variable that no flag reads, with the known
// name nearest to it.
type unknownVar struct{ name, nearest string }

// unknownEnv lists the variables of environ ("NAME=value", as os.Environ)
// that begin with AGUI_RELAY_ but set no flag of fs, each with the name of
// fs's nearest by edit distance: AGUI_RELAY_UPSTREM is AGUI_RELAY_UPSTREAM
// misspelt, which would otherwise start the demo agent without a word.
func unknownEnv(environ []string, fs *flag.FlagSet) []unknownVar {
	var known []string // in the flags' order, which is by name
	isKnown := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		known = append(known, EnvName(f.Name))
		isKnown[EnvName(f.Name)] = true
	})
	var out []unknownVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || isKnown[name] {
			continue
		}
		u := unknownVar{name: name}
		best := -1
		for _, k := range known {
			if d := editDistance(name, k); best < 0 || d < best {
				u.nearest, best = k, d
			}
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// warnUnknownEnv logs unknownEnv's variables, one warning each. A warning,
// not an error: see docs/operations.md, "Environment variables".
func warnUnknownEnv(log *zap.Logger, environ []string, fs *flag.FlagSet) {
	for _, u := range unknownEnv(environ, fs) {
		log.Warn("environment variable "+u.name+" sets no flag; did you mean "+u.nearest+"?",
			zap.String("variable", u.name), zap.String("nearest", u.nearest))
	}
}

// editDistance is the Levenshtein distance between a and b, in bytes (the
// names are ASCII).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
