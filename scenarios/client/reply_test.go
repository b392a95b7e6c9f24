package client

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestReplyKind: a grant and a refusal of the same command are told apart
// by the kind of reply, whichever way round a lock reads them (SET NX: a
// value grants, nil refuses; Redisson's script: nil grants).
func TestReplyKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  redis.Cmder
		want string
	}{
		{"SET NX granted", redis.NewStatusResult("OK", nil), lockimpl.ReplyValue},
		{"SET NX refused", redis.NewStatusResult("", redis.Nil), lockimpl.ReplyNil},
		{"SETNX 0", redis.NewBoolResult(false, nil), lockimpl.ReplyZero},
		{"SETNX 1", redis.NewBoolResult(true, nil), lockimpl.ReplyValue},
		{"DEL 0", redis.NewIntResult(0, nil), lockimpl.ReplyZero},
		{"script nil", redis.NewCmdResult(nil, nil), lockimpl.ReplyNil},
		{"script 0", redis.NewCmdResult(int64(0), nil), lockimpl.ReplyZero},
		{"script pttl", redis.NewCmdResult(int64(250), nil), lockimpl.ReplyValue},
		{"timeout", redis.NewCmdResult(nil, errors.New("i/o timeout")), lockimpl.ReplyError},
	} {
		if got := replyKind(tc.cmd); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
