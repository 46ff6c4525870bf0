// Package logonce keeps bad input from flooding the collector's log: the
// first line of a kind (a run and a reason) is a warning, the rest go to
// debug. Kinds are remembered in a bounded LRU: a collector serving runs
// for months must not grow with every run it has seen, and forgetting a
// long-quiet kind costs one more warning, the safe side.
package logonce

import (
	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
)

// DefaultSize is how many kinds are remembered.
const DefaultSize = 10000

// Logger logs one warning per key. It is safe for concurrent use.
type Logger struct {
	logger *zap.Logger
	seen   *lru.Cache[string, struct{}]
}

// New remembers up to size keys; size < 1 means DefaultSize.
func New(logger *zap.Logger, size int) *Logger {
	if size < 1 {
		size = DefaultSize
	}
	seen, _ := lru.New[string, struct{}](size) // errs only on size < 1
	return &Logger{logger: logger, seen: seen}
}

// Warn logs msg at warning level the first time key is seen, at debug
// level after that.
func (l *Logger) Warn(key, msg string, fields ...zap.Field) {
	if seen, _ := l.seen.ContainsOrAdd(key, struct{}{}); seen {
		l.logger.Debug(msg, fields...)
		return
	}
	l.logger.Warn(msg, fields...)
}

// Info is Warn for what is expected rather than wrong: info level the
// first time key is seen, debug after that.
func (l *Logger) Info(key, msg string, fields ...zap.Field) {
	if seen, _ := l.seen.ContainsOrAdd(key, struct{}{}); seen {
		l.logger.Debug(msg, fields...)
		return
	}
	l.logger.Info(msg, fields...)
}
