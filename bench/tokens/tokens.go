// Package tokens counts BPE tokens as OpenAI's models do, for the
// benchmarks that report what enters a model's context.
package tokens

import (
	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// A Counter counts tokens with the cl100k_base and o200k_base encodings.
// The encodings' files are embedded (tiktoken-go-loader), so counting
// needs no network. Other models' tokenizers differ; these two give the
// order of magnitude.
type Counter struct {
	c100, o200 *tiktoken.Tiktoken
}

// New loads both encodings.
func New() (*Counter, error) {
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	c100, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		return nil, err
	}
	o200, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		return nil, err
	}
	return &Counter{c100, o200}, nil
}

// CL100k is the number of cl100k_base tokens of b.
func (c *Counter) CL100k(b []byte) int { return len(c.c100.Encode(string(b), nil, nil)) }

// O200k is the number of o200k_base tokens of b.
func (c *Counter) O200k(b []byte) int { return len(c.o200.Encode(string(b), nil, nil)) }
