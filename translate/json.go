package translate

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// Get reads path from ev without copying: the Result's Raw aliases ev, so it
// is valid only as long as ev is.
func Get(ev []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(ev), len(ev)), path)
}
