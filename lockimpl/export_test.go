package lockimpl

// RedlockNodeTimeout is redlock's default per-node timeout, for tests.
var RedlockNodeTimeout = redlockNodeTimeout
