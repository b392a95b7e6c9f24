package redsyncadapter

import (
	"context"
	"errors"
	"strings"
	"time"

	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"
)

// notSentError is a command the pool refused to send because the caller's
// context was already done: no server saw it, so an acquire that met only
// this error is a definite "no". redsync before v4.8 does not look at its
// context between tries; this is where the wait timeout ends its loop. It
// does not unwrap to the context's error, which would read as a lost reply.
type notSentError struct{ cause error }

func (e *notSentError) Error() string { return "redsync pool: not sent: " + e.cause.Error() }

// Pool is redsync's redis.Pool over the go-redis v9 client lockstorm hands
// a lock. redsync ships a go-redis v9 pool only from v4.8; this is the same
// code as its goredis/v8 and goredis/v9 pools (EVALSHA, EVAL on NOSCRIPT, a
// nil reply as no error), so older releases talk to Redis as their users'
// pools did. Its methods are the union of every release's Conn (ScriptLoad
// came later; an older interface ignores it).
func Pool(c redis.UniversalClient) redsyncredis.Pool { return &pool{c} }

type pool struct{ c redis.UniversalClient }

func (p *pool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, &notSentError{err}
	}
	return &conn{p.c, ctx}, nil
}

type conn struct {
	c   redis.UniversalClient
	ctx context.Context
}

func (c *conn) Get(name string) (string, error) {
	v, err := c.c.Get(c.ctx, name).Result()
	return v, noErrNil(err)
}

func (c *conn) Set(name string, value string) (bool, error) {
	reply, err := c.c.Set(c.ctx, name, value, 0).Result()
	return reply == "OK", err
}

func (c *conn) SetNX(name string, value string, expiry time.Duration) (bool, error) {
	return c.c.SetNX(c.ctx, name, value, expiry).Result()
}

func (c *conn) PTTL(name string) (time.Duration, error) {
	return c.c.PTTL(c.ctx, name).Result()
}

func (c *conn) Eval(script *redsyncredis.Script, keysAndArgs ...any) (any, error) {
	keys := make([]string, script.KeyCount)
	args := keysAndArgs
	if script.KeyCount > 0 {
		for i := range script.KeyCount {
			keys[i] = keysAndArgs[i].(string)
		}
		args = keysAndArgs[script.KeyCount:]
	}
	v, err := c.c.EvalSha(c.ctx, script.Hash, keys, args...).Result()
	if err != nil && strings.Contains(err.Error(), "NOSCRIPT ") {
		v, err = c.c.Eval(c.ctx, script.Src, keys, args...).Result()
	}
	return v, noErrNil(err)
}

func (c *conn) ScriptLoad(script *redsyncredis.Script) error {
	v, err := c.c.ScriptLoad(c.ctx, script.Src).Result()
	if err == nil {
		script.Hash = v
	}
	return err
}

func (c *conn) Close() error { return nil }

func noErrNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
