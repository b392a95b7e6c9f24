package zoo

import (
	"context"
	"errors"
	"time"

	oldredis "github.com/go-redis/redis/v9"
	"github.com/redis/go-redis/v9"
)

// shim is v0.8.2's RedisClient (github.com/go-redis/redis/v9's Scripter
// and SetNX) over the run's github.com/redis/go-redis/v9 client, so its
// commands take the run's connections (proxies, command points). Each
// command's value and error are handed over as they are, but the nil
// reply, which the library compares with its go-redis's own redis.Nil.
type shim struct{ c redis.UniversalClient }

func oldErr(err error) error {
	if errors.Is(err, redis.Nil) {
		return oldredis.Nil
	}
	return err
}

func oldCmd(ctx context.Context, c *redis.Cmd) *oldredis.Cmd {
	o := oldredis.NewCmd(ctx)
	o.SetVal(c.Val())
	o.SetErr(oldErr(c.Err()))
	return o
}

func (s shim) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *oldredis.Cmd {
	return oldCmd(ctx, s.c.Eval(ctx, script, keys, args...))
}

func (s shim) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *oldredis.Cmd {
	return oldCmd(ctx, s.c.EvalSha(ctx, sha1, keys, args...))
}

func (s shim) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *oldredis.Cmd {
	return oldCmd(ctx, s.c.EvalRO(ctx, script, keys, args...))
}

func (s shim) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *oldredis.Cmd {
	return oldCmd(ctx, s.c.EvalShaRO(ctx, sha1, keys, args...))
}

func (s shim) ScriptExists(ctx context.Context, hashes ...string) *oldredis.BoolSliceCmd {
	c := s.c.ScriptExists(ctx, hashes...)
	o := oldredis.NewBoolSliceCmd(ctx)
	o.SetVal(c.Val())
	o.SetErr(oldErr(c.Err()))
	return o
}

func (s shim) ScriptLoad(ctx context.Context, script string) *oldredis.StringCmd {
	c := s.c.ScriptLoad(ctx, script)
	o := oldredis.NewStringCmd(ctx)
	o.SetVal(c.Val())
	o.SetErr(oldErr(c.Err()))
	return o
}

func (s shim) SetNX(ctx context.Context, key string, value interface{}, expiration time.Duration) *oldredis.BoolCmd {
	c := s.c.SetNX(ctx, key, value, expiration)
	o := oldredis.NewBoolCmd(ctx)
	o.SetVal(c.Val())
	o.SetErr(oldErr(c.Err()))
	return o
}
