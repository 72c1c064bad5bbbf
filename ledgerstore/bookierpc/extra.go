package bookierpc

// Done returns a channel that is closed once the connection has ended: the
// bookie closed it, it broke, a response failed to decode, or Close was
// called. By then every call outstanding on it has received its error. The
// ledger client watches it to report a dead bookie at once instead of
// waiting for each request's timeout.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended (wrapping ErrClientClosed), or nil
// while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
