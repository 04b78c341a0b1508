package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// generatedToken makes a random token for a run given none and prints it
// on stderr, with how to choose one instead (envName or -token). serve
// and the file listeners share it, so that "no token" means the same
// everywhere: a token is still required, and it is this one.
func generatedToken(env *Env, envName string) string {
	t := make([]byte, 24)
	rand.Read(t)
	generated := hex.EncodeToString(t)
	fmt.Fprintf(env.Stderr, "junction: no token given; this run accepts the generated token\n\n    %s\n\nsend it as \"Authorization: Bearer <token>\" (set %s or -token to choose your own)\n\n", generated, envName)
	return generated
}
