package engine

// WriteManifest lets tests rebuild manifest.json the way the engine does, as a
// forger who re-chains the journal would.
var WriteManifest = writeManifest

// FailSyncs makes every later fsync of j's file fail with err.
func FailSyncs(j *Journal, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.f = syncFailing{journalSink: j.f, err: err}
}

type syncFailing struct {
	journalSink
	err error
}

func (s syncFailing) Sync() error { return s.err }

// SetHashedHook makes f run after each step's inputs are hashed, until the
// returned function is called.
func SetHashedHook(f func(addr string)) (reset func()) {
	testHookHashed = f
	return func() { testHookHashed = nil }
}
