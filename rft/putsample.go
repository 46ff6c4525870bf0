package rft

import "context"

// PutSample uploads one step's sample object: it presigns first when p has
// no URL, then PUTs body to the URL. It returns the Presigned it used (the
// new one if it presigned) with any PUT error, so that a caller can PUT to
// the same URL again without minting another; a failed presign returns no
// URL and PUTs nothing. The error's Op says which request failed.
//
// Replayable: the presign only mints a URL, and a PUT of the same bytes to
// the same key leaves the same object.
func (c *Client) PutSample(ctx context.Context, runID string, step int64, p Presigned, body []byte) (Presigned, error) {
	if p.URL == "" {
		var err error
		if p, err = c.Presign(ctx, runID, step); err != nil {
			return Presigned{}, err
		}
	}
	return p, c.Put(ctx, p.URL, body)
}
