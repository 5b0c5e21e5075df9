package linkstore

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/andybalholm/brotli"
)

// brotliCodec stores the protobuf encoding as a brotli stream. The window
// (lgwin) defaults to the smallest brotli allows, 10 (1 KiB - 16 B): records
// are ~1 KB, so a bigger window finds no extra matches but costs memory and
// time. Writers and readers are pooled.
type brotliCodec struct {
	maxSize int
	writers sync.Pool // *brotliWriter
	readers sync.Pool // *brotliReader
}

type brotliWriter struct {
	w   *brotli.Writer
	out appendWriter
}

type brotliReader struct {
	r   *brotli.Reader
	src bytes.Reader
}

// appendWriter is an io.Writer that appends to buf.
type appendWriter struct{ buf []byte }

func (a *appendWriter) Write(p []byte) (int, error) {
	a.buf = append(a.buf, p...)
	return len(p), nil
}

func newBrotliCodec(opts Options) *brotliCodec {
	c := &brotliCodec{maxSize: opts.MaxDecodedSize}
	writerOpts := brotli.WriterOptions{Quality: opts.BrotliQuality, LGWin: opts.BrotliWindowBits}
	c.writers.New = func() any {
		bw := new(brotliWriter)
		bw.w = brotli.NewWriterOptions(&bw.out, writerOpts)
		return bw
	}
	c.readers.New = func() any {
		br := new(brotliReader)
		br.r = brotli.NewReader(&br.src)
		return br
	}
	return c
}

func (c *brotliCodec) Name() string { return CodecProtoBrotli }

func (c *brotliCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	s := getProtoScratch()
	defer putProtoScratch(s)
	var err error
	if s.buf, err = appendProto(s.buf[:0], rec, s); err != nil {
		return dst, err
	}
	bw := c.writers.Get().(*brotliWriter)
	bw.out.buf = appendHeader(dst, Header{Format: FormatProtoBrotli})
	bw.w.Reset(&bw.out)
	_, werr := bw.w.Write(s.buf)
	cerr := bw.w.Close()
	out := bw.out.buf
	bw.out.buf = nil
	c.writers.Put(bw)
	if err := errors.Join(werr, cerr); err != nil {
		// appendWriter never fails, so this is a brotli bug; report it.
		return dst, errors.Join(errors.New("linkstore: brotli encode"), err)
	}
	return out, nil
}

func (c *brotliCodec) Decode(src []byte) (*Record, error) {
	_, payload, err := checkHeader(src, FormatProtoBrotli)
	if err != nil {
		return nil, err
	}
	s := getProtoScratch()
	defer putProtoScratch(s)
	br := c.readers.Get().(*brotliReader)
	br.src.Reset(payload)
	_ = br.r.Reset(&br.src) // always nil
	s.out, err = readCapped(br.r, s.out[:0], c.maxSize, CodecProtoBrotli)
	br.src.Reset(nil)
	c.readers.Put(br)
	if err != nil {
		return nil, err
	}
	return decodeProto(s.out)
}

// readCapped reads r to EOF into buf, failing once more than limit bytes
// come out.
func readCapped(r io.Reader, buf []byte, limit int, codec string) ([]byte, error) {
	buf = buf[:0]
	for {
		if len(buf) > limit {
			return buf, errTooLarge(codec, len(buf), limit)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(2048, cap(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, wrapCorrupt(codec, err)
		}
	}
}
