package cli

import (
	"context"
	"errors"
)

func runToolsList(ctx context.Context, env *Env, args []string) error { return errors.New("todo") }
func runToolsCall(ctx context.Context, env *Env, args []string) error { return errors.New("todo") }
func runLock(ctx context.Context, env *Env, args []string) error      { return errors.New("todo") }
func runSelftest(ctx context.Context, env *Env, args []string) error  { return errors.New("todo") }
