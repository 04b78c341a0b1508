package junction

// SetTestHookScriptStarted sets testHookScriptStarted until the returned
// func is called.
func SetTestHookScriptStarted(h func()) (restore func()) {
	testHookScriptStarted.Store(&h)
	return func() { testHookScriptStarted.Store(nil) }
}
