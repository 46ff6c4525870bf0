package upload

import (
	"bytes"
	"context"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// object is one part of a step's episodes, sent as one sample object, and
// its fingerprint (objectFingerprint).
type object struct {
	eps []episode
	fp  uint64
}

// resume cuts a step's episodes into objects and reads, in one call to
// the store, which of them were delivered before and what earlier
// attempts left of the objects. Episodes delivered before are left out
// (already_delivered: a batch replayed after a restart adds nothing), and
// what is left is cut anew; an object of that new cut that resume did not
// ask for is read on its own by take.
func (u *Uploader) resume(ctx context.Context, l ObjectRun, step int64, eps []episode) ([]object, *prior, error) {
	objects := u.cut(step, eps)
	fps := make([]uint64, len(eps))
	for i, e := range eps {
		fps[i] = e.fp
	}
	objFPs := make([]uint64, len(objects))
	for i, o := range objects {
		objFPs[i] = o.fp
	}
	delivered, read, err := u.objects.resume(ctx, l, step, fps, objFPs)
	if err != nil {
		return nil, nil, err
	}
	kept := leaveOutDelivered(u, l, eps, delivered)
	if len(kept) == len(eps) {
		return objects, read, nil // nearly every push
	}
	return u.cut(step, kept), read, nil
}

// cut splits a step's episodes into objects of at most max_object_bytes.
func (u *Uploader) cut(step int64, eps []episode) []object {
	parts := splitBySize(eps, u.cfg.MaxObjectBytes)
	objects := make([]object, len(parts))
	for i, p := range parts {
		objects[i] = object{eps: p, fp: objectFingerprint(step, p)}
	}
	return objects
}

// splitBySize cuts a step's episodes into parts of at most max bytes of
// encoded text; every part holds at least one episode.
func splitBySize(eps []episode, max int64) [][]episode {
	if len(eps) == 0 {
		return nil
	}
	var parts [][]episode
	start, size := 0, int64(0)
	for i, e := range eps {
		if i > start && size+int64(e.ep.Size) > max {
			parts = append(parts, eps[start:i])
			start, size = i, 0
		}
		size += int64(e.ep.Size)
	}
	return append(parts, eps[start:])
}

// uploadObject encodes one object with its range and sends it.
func (u *Uploader) uploadObject(ctx context.Context, l ObjectRun, step int64, o object, prior *prior) error {
	fp, part := o.fp, o.eps
	obj := u.objects.take(ctx, l, fp, step, prior)
	buf := u.bodies.get()
	defer u.bodies.put(buf)
	if err := u.encode(ctx, buf, l.ID(), step, obj.Range, part); err != nil {
		return err
	}
	fps := make([]uint64, len(part))
	for i, e := range part {
		fps[i] = e.fp
	}
	if err := u.objects.Send(ctx, l, fp, obj, buf.Bytes(), fps); err != nil {
		return err
	}
	u.tel.SamplesUploaded(len(part), 1, buf.Len())
	return nil
}

// encode writes the object into buf once an encoding slot is free.
func (u *Uploader) encode(ctx context.Context, buf *bytes.Buffer, runID string, step, rangeIdx int64, part []episode) error {
	select {
	case u.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-u.slots }()
	eps := make([]*sampletable.Episode, len(part))
	size := 0
	for i, e := range part {
		eps[i] = e.ep
		size += e.ep.Size
	}
	enc := u.encoders.get()
	defer u.encoders.put(enc)
	buf.Reset()
	buf.Grow(size/2 + 4096)
	return enc.EncodeRows(buf, runID, step, rangeIdx, eps)
}
