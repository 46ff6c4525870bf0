package main

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// floorText is the text the sample table's writer must compress for some
// of a load's episodes: every string cell of their rows, as the exporter
// maps them (sampletable.AppendCellText, what BenchmarkSnappyFloor
// compresses), at the load's own episode size and chat text.
type floorText struct {
	text     []byte
	episodes int
}

// floorSample is how much of a load the floor is measured on: enough
// episodes, and enough text for many pages, that one timing is stable.
const (
	floorEpisodes = 2048
	floorBytes    = 64 << 20
)

// sampleFloorText maps the load's first requests, as the exporter would,
// until floorEpisodes or floorBytes, and lays their cells out column by
// column, as one object holds them.
func sampleFloorText(l *load) (floorText, error) {
	var ft floorText
	var rows []sampletable.Episode
	size := 0
	now := time.Now()
	for _, raw := range l.requests {
		if len(rows) >= floorEpisodes || size >= floorBytes {
			break
		}
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			return ft, err
		}
		for _, rl := range req.Logs().ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					rec, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), now)
					if err != nil {
						return ft, fmt.Errorf("the load's episode does not map: %w", err)
					}
					for _, ep := range rec.Rows {
						rows = append(rows, ep)
						size += ep.Size
					}
				}
			}
		}
	}
	if len(rows) == 0 {
		return ft, fmt.Errorf("load %s has no episode with a row", l.spec.name)
	}
	// One step's rows are one object's; the text is the same whatever the
	// step, so the rows go together as one.
	ft.text = sampletable.AppendCellText(nil, "bench-run", rows[0].Step, rows)
	ft.episodes = len(rows)
	return ft, nil
}

// snappyFloor is the CPU spent per episode compressing ft with Snappy in
// pages of the writer's size, as the exporter's writer does (s2's
// Snappy-compatible encoder at standard speed): the work no writer that
// keeps the contract's codec avoids. It compresses on every core at once
// (cores goroutines, each on its own locked thread), as the collector
// under load does: a core shares caches, memory bandwidth and, on a
// virtual machine, its host's hyperthreads with the others, and one core
// timed alone runs faster than that. Each thread's time is its own CPU
// time, so other processes on the cores lengthen the wall clock but not
// the figure, as with the collector's CPU.
func snappyFloor(ft floorText, cores int, minCPU time.Duration) (time.Duration, error) {
	type share struct {
		cpu      time.Duration
		episodes int
		err      error
	}
	shares := make([]share, cores)
	var wg sync.WaitGroup
	for c := range cores {
		wg.Go(func() {
			cpu, rounds, err := compressFor(ft, minCPU)
			shares[c] = share{cpu, rounds * ft.episodes, err}
		})
	}
	wg.Wait()
	var cpu time.Duration
	episodes := 0
	for _, s := range shares {
		if s.err != nil {
			return 0, s.err
		}
		cpu += s.cpu
		episodes += s.episodes
	}
	return cpu / time.Duration(episodes), nil
}

// compressFor compresses ft's text on a locked thread until it has used
// minCPU, and says how much CPU it used over how many rounds.
func compressFor(ft floorText, minCPU time.Duration) (time.Duration, int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dst := make([]byte, s2.MaxEncodedLen(sampletable.PageSize))
	compress := func() {
		for at := 0; at < len(ft.text); at += sampletable.PageSize {
			s2.EncodeSnappy(dst, ft.text[at:min(len(ft.text), at+sampletable.PageSize)])
		}
	}
	compress() // warm: the pages in cache as a page buffer would be
	start, err := threadCPU()
	if err != nil {
		return 0, 0, err
	}
	rounds := 0
	for {
		compress()
		rounds++
		now, err := threadCPU()
		if err != nil {
			return 0, 0, err
		}
		if used := now - start; used >= minCPU {
			return used, rounds, nil
		}
	}
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

// threadGroupCPU is this process's CPU time, user and system, all threads.
func threadGroupCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// threadCPU is the calling thread's CPU time, user and system.
func threadCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
