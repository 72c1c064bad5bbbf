package httpadmin

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// obj is a JSON object whose keys keep their order, as a Java
// LinkedHashMap or a Jackson bean writes them.
type obj []field

type field struct {
	key string
	val any // string, int64, int, bool, nil, obj or []any
}

// pretty writes v the way BookKeeper's JSON helper does (Jackson's default
// pretty printer): objects one field a line indented by two spaces with
// " : " between key and value, arrays on one line as [ a, b ], and empty
// containers as { } and [ ].
func pretty(v any) []byte {
	var b bytes.Buffer
	writeValue(&b, v, 0)
	return b.Bytes()
}

func writeValue(b *bytes.Buffer, v any, depth int) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case string:
		writeString(b, v)
	case obj:
		if len(v) == 0 {
			b.WriteString("{ }")
			return
		}
		b.WriteString("{\n")
		for i, f := range v {
			indent(b, depth+1)
			writeString(b, f.key)
			b.WriteString(" : ")
			writeValue(b, f.val, depth+1)
			if i < len(v)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		indent(b, depth)
		b.WriteByte('}')
	case []any:
		if len(v) == 0 {
			b.WriteString("[ ]")
			return
		}
		b.WriteString("[ ")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, depth)
		}
		b.WriteString(" ]")
	default:
		panic("httpadmin: no JSON form for a value of this type")
	}
}

func indent(b *bytes.Buffer, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}

// writeString writes s quoted, escaping as JSON requires but leaving <, >
// and & alone, as Jackson does.
func writeString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}
