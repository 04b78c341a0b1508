package main

import (
	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// A counter counts BPE tokens with OpenAI's cl100k_base and o200k_base
// encodings. The encodings' files are embedded (tiktoken-go-loader), so
// counting needs no network. Other models' tokenizers differ; these two
// give the order of magnitude.
type counter struct {
	c100, o200 *tiktoken.Tiktoken
}

func newCounter() (*counter, error) {
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	c100, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		return nil, err
	}
	o200, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		return nil, err
	}
	return &counter{c100, o200}, nil
}

func (c *counter) cl100k(b []byte) int { return len(c.c100.Encode(string(b), nil, nil)) }
func (c *counter) o200k(b []byte) int  { return len(c.o200.Encode(string(b), nil, nil)) }
