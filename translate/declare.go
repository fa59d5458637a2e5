package translate

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/agui-relay/agui-relay/negotiate"
)

// Declare applies a declaration to the protocolVersion member of a
// RUN_STARTED event or a RunAgentInput: DeclareSet writes version,
// DeclareOmit removes the member, DeclareKeep leaves doc as it is. It
// returns the document to use (doc itself when unchanged, else a rewrite in
// buf) and buf for reuse.
func Declare(doc []byte, d negotiate.Declaration, version string, buf []byte) (out, reuse []byte) {
	cur := Get(doc, "protocolVersion")
	switch d {
	case negotiate.DeclareSet:
		if cur.Type == gjson.String && cur.Str == version {
			return doc, buf
		}
		b, err := sjson.SetBytes(append(buf[:0], doc...), "protocolVersion", version)
		if err != nil {
			return doc, buf
		}
		return b, b
	case negotiate.DeclareOmit:
		if !cur.Exists() {
			return doc, buf
		}
		b, err := sjson.DeleteBytes(append(buf[:0], doc...), "protocolVersion")
		if err != nil {
			return doc, buf
		}
		return b, b
	}
	return doc, buf
}
