// Package diagramtest damages diagram run stores for tests, as a disk
// error or a careless edit would.
package diagramtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Offsets in a bbolt file: a page starts with a 16-byte header (id,
// flags, count, overflow); a meta page's body holds, from its start,
// magic, version, page size, flags, the root bucket (16 bytes), the
// freelist's page id, the high-water page id, the transaction id and a
// checksum.
const (
	pageHeader     = 16
	metaPageSize   = pageHeader + 8
	metaFreelist   = pageHeader + 32
	metaTxID       = pageHeader + 48
	freelistPageFl = 0x10
)

// ListFreelistInItself rewrites the freelist page of the bbolt file at
// path so that, besides the pages it lists, it names itself as free. The
// file still opens and passes bbolt's consistency check, but bbolt
// panics with "page N already freed" when it next commits a write: the
// damage the diagram pack's run store was seen to crash on.
func ListFreelistInItself(path string) error {
	f, pageSize, err := openBolt(path)
	if err != nil {
		return err
	}
	defer f.Close()
	first, second := make([]byte, 128), make([]byte, 128)
	if _, err := f.ReadAt(first, 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(second, pageSize); err != nil {
		return err
	}
	// The meta page with the higher transaction id is the current one.
	cur := first
	if binary.LittleEndian.Uint64(second[metaTxID:]) > binary.LittleEndian.Uint64(first[metaTxID:]) {
		cur = second
	}
	freelist := binary.LittleEndian.Uint64(cur[metaFreelist:])
	if freelist == 0 || freelist == ^uint64(0) {
		return errors.New("the file has no freelist page")
	}
	page := make([]byte, pageSize)
	if _, err := f.ReadAt(page, int64(freelist)*pageSize); err != nil {
		return err
	}
	count := int(binary.LittleEndian.Uint16(page[10:]))
	if count >= 0xFFFF || pageHeader+8*(count+1) > len(page) {
		return fmt.Errorf("freelist of %d pages: too long for this test helper", count)
	}
	ids := make([]uint64, 0, count+1)
	for i := range count {
		ids = append(ids, binary.LittleEndian.Uint64(page[pageHeader+8*i:]))
	}
	ids = append(ids, freelist)
	slices.Sort(ids)
	binary.LittleEndian.PutUint16(page[8:], freelistPageFl)
	binary.LittleEndian.PutUint16(page[10:], uint16(len(ids)))
	for i, id := range ids {
		binary.LittleEndian.PutUint64(page[pageHeader+8*i:], id)
	}
	_, err = f.WriteAt(page, int64(freelist)*pageSize)
	return err
}

// BreakMetaPages overwrites both meta pages of the bbolt file at path,
// so that bbolt no longer recognises it ("invalid database").
func BreakMetaPages(path string) error {
	f, pageSize, err := openBolt(path)
	if err != nil {
		return err
	}
	defer f.Close()
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = 0xA5
	}
	for _, off := range []int64{0, pageSize} {
		if _, err := f.WriteAt(junk, off+pageHeader); err != nil {
			return err
		}
	}
	return nil
}

// openBolt opens the bbolt file at path for writing and reads its page
// size.
func openBolt(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, err
	}
	b := make([]byte, metaPageSize+4)
	if _, err := f.ReadAt(b, 0); err != nil {
		f.Close()
		return nil, 0, err
	}
	n := int64(binary.LittleEndian.Uint32(b[metaPageSize:]))
	if n < 1024 || n > 1<<16 {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a bbolt file (page size %d)", path, n)
	}
	return f, n, nil
}
