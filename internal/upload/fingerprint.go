package upload

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// episodeFingerprint identifies an episode by its content, which a replay
// of the same record reproduces (created_at comes from the record's own
// timestamps).
func episodeFingerprint(ep *sampletable.Episode) uint64 {
	var h xxhash.Digest
	h.Reset()
	var n [8]byte
	word := func(v int64) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		_, _ = h.Write(n[:])
	}
	text := func(p *string) {
		if p == nil {
			word(-1)
			return
		}
		word(int64(len(*p)))
		_, _ = h.WriteString(*p)
	}
	word(ep.Step)
	word(ep.CreatedAt.UnixMicro())
	// The rows of one oversized document can be alike but for the trace
	// they project. Part is hashed only when set, so that every other
	// row keeps the fingerprint it had before Part existed and a replay
	// across an upgrade still finds what was delivered; the -2 before it
	// is no length, so no other row hashes the same words.
	if ep.Part != 0 {
		word(-2)
		word(int64(ep.Part))
	}
	for _, s := range []*string{&ep.Tag, &ep.Prompt, &ep.Answer, &ep.Trajectory, ep.EnvName, ep.Completion, ep.Task, ep.Info, ep.Metrics, ep.Timing} {
		text(s)
	}
	return h.Sum64()
}

// objectFingerprint identifies an object by its step and episodes, so the
// retry of the same records finds the upload it left pending.
func objectFingerprint(step int64, part []episode) uint64 {
	buf := make([]byte, 8*(len(part)+1))
	binary.LittleEndian.PutUint64(buf, uint64(step))
	for i, e := range part {
		binary.LittleEndian.PutUint64(buf[8*(i+1):], e.fp)
	}
	return xxhash.Sum64(buf)
}
