package wire

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Answers to a host's requests, written around result bytes as the
// source returned them: the envelope is built here, the result is never
// decoded.

// AnswerLine is the JSON-RPC answer to a host's request id (as sent): the result
// res, or the protocol error werr; it ends in a newline.
func AnswerLine(id []byte, res json.RawMessage, werr *jsonrpc.Error) []byte {
	if werr != nil {
		return ErrorLine(id, werr)
	}
	return AppendAnswer(make([]byte, 0, AnswerSize(id, res)), id, res, nil)
}

// AppendAnswer appends AnswerLine's line to dst.
func AppendAnswer(dst, id []byte, res json.RawMessage, werr *jsonrpc.Error) []byte {
	if werr != nil {
		return append(dst, ErrorLine(id, werr)...)
	}
	dst = appendAnswerHead(dst, id)
	dst = append(dst, res...)
	return append(dst, "}\n"...)
}

// AnswerSize is the length of AnswerLine's line for a result, about.
func AnswerSize(id []byte, res json.RawMessage) int { return len(id) + len(res) + 40 }

// AnswerParts is AnswerLine in parts, for writers that take them one
// after the other: a big result is not copied, but written from where it
// is between the envelope's head and its end.
func AnswerParts(id []byte, res json.RawMessage, werr *jsonrpc.Error) [][]byte {
	if werr == nil && len(res) > BigWrite {
		return [][]byte{AnswerHead(id), res, []byte("}\n")}
	}
	return [][]byte{AnswerLine(id, res, werr)}
}

// AnswerHead is the start of AnswerLine's answer, up to the result.
func AnswerHead(id []byte) []byte {
	return appendAnswerHead(make([]byte, 0, len(id)+32), id)
}

func appendAnswerHead(buf, id []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	return append(buf, `,"result":`...)
}

// ErrorLine is a JSON-RPC error answer, ending in a newline.
func ErrorLine(id []byte, e *jsonrpc.Error) []byte {
	msg, _ := json.Marshal(e.Message)
	buf := make([]byte, 0, len(id)+len(msg)+80)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, e.Code, 10)
	buf = append(buf, `,"message":`...)
	buf = append(buf, msg...)
	if len(e.Data) > 0 {
		buf = append(buf, `,"data":`...)
		buf = append(buf, e.Data...)
	}
	return append(buf, "}}\n"...)
}

// AppendCancelled appends to dst a notifications/cancelled for the
// request id (JSON, as sent), with reason.
func AppendCancelled(dst []byte, id, reason string) []byte {
	q, _ := json.Marshal(reason) // strconv's quoting is not JSON's (\x01)
	dst = slices.Grow(dst, 96+len(id)+len(q))
	dst = append(dst, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"reason":`...)
	dst = append(dst, q...)
	return append(dst, "}}"...)
}
