package history

import (
	"math"
	"sync"
	"time"
	"unsafe"
)

// Recorder appends entries with times from one monotonic clock. It is safe
// for concurrent use by every client and the nemesis. Entries are kept in
// fixed-size chunks, so a long run never copies what it already recorded,
// and in a compact form (recOp) that History expands.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	chunks [][]recOp
	n      int
	ended  bool
	// bytes holds the entries' strings back to back, in blocks that are
	// only ever appended to: History's strings point into them.
	bytes [][]byte
	// rare holds the fields most entries leave empty (recOp.rare is an
	// index into it, plus one).
	rare []rareFields
}

const (
	recorderChunk = 4096
	// recorderBytes is the size of a string block; an entry whose strings
	// are longer gets a block of its own size.
	recorderBytes = 64 << 10
)

// recOp is an Op as the Recorder keeps it: 56 bytes and no pointer. The
// index is the position; the type and the function are a byte each when
// they are one of the constants; key, value and error are lengths into a
// string block; the fields most entries leave empty (a server event's node
// and owner, a fault's targets, a step's fired list, the header, a type or
// function that is no constant, a process or a string too large for its
// field) sit in the recorder's rare list.
//
// No pointer is what makes it cheap: a run of a million entries kept them
// in chunks the collector scanned again at every cycle while the heap
// grew, and every append paid write barriers while it marked.
type recOp struct {
	time, n, fence   int64
	process, client  int32
	block, off       uint32
	keyLen, valueLen uint16
	errLen           uint16
	typ, f           uint8
	errorReply       bool
	rare             uint32
}

// rareFields are the fields of an Op that most entries leave empty, and
// the ones that did not fit their compact field.
type rareFields struct {
	typ             Type
	f               string
	process, client int
	key, value, err string
	node, owner     string
	targets         *FaultTargets
	fired           []int
	tries           []int64
	meta            *Meta
}

// recTypes and recFuncs are the constants a recOp names by their position
// (0: the empty string; noCode: the value is in rareFields).
var (
	recTypes = []Type{"", Invoke, Ok, Fail, Info}
	recFuncs = []string{"", FAcquire, FRelease, FExtend, FRead, FWrite, FStep, FLost, FCrash, FAbandon,
		FStart, FStop, FEnd, FMeta, FServer, FSync, FStall, FSentinel, FMaster}
)

const noCode = 255

// TypeCode and funcCode are the positions in recTypes and recFuncs (a
// switch: a walk over the table comparing strings was a fifth of Add). A
// checker keeps entry types in its own compact records by TypeCode, and
// reads them back with TypeOfCode.
func TypeCode(t Type) uint8 {
	switch t {
	case "":
		return 0
	case Invoke:
		return 1
	case Ok:
		return 2
	case Fail:
		return 3
	case Info:
		return 4
	}
	return noCode
}

// TypeOfCode is the type whose TypeCode is c.
func TypeOfCode(c uint8) Type { return recTypes[c] }

func funcCode(f string) uint8 {
	switch f {
	case "":
		return 0
	case FAcquire:
		return 1
	case FRelease:
		return 2
	case FExtend:
		return 3
	case FRead:
		return 4
	case FWrite:
		return 5
	case FStep:
		return 6
	case FLost:
		return 7
	case FCrash:
		return 8
	case FAbandon:
		return 9
	case FStart:
		return 10
	case FStop:
		return 11
	case FEnd:
		return 12
	case FMeta:
		return 13
	case FServer:
		return 14
	case FSync:
		return 15
	case FStall:
		return 16
	case FSentinel:
		return 17
	case FMaster:
		return 18
	}
	return noCode
}

// fits says whether a process or client number fits its int32 field.
func fits(v int) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }

// pack is the part of an entry that needs no lock: everything but the
// time, the strings' place and the rare list's index. rare is set when
// the entry does not fit the compact form.
func pack(op *Op) (r recOp, rare bool) {
	r = recOp{n: op.N, fence: op.Fence, process: int32(op.Process), client: int32(op.Client),
		keyLen: uint16(len(op.Key)), valueLen: uint16(len(op.Value)), errLen: uint16(len(op.Error)),
		errorReply: op.ErrorReply, typ: TypeCode(op.Type), f: funcCode(op.F)}
	rare = r.typ == noCode || r.f == noCode || op.Node != "" || op.Owner != "" || op.Targets != nil ||
		op.Fired != nil || op.Tries != nil || op.Meta != nil || !fits(op.Process) || !fits(op.Client) ||
		len(op.Key) > math.MaxUint16 || len(op.Value) > math.MaxUint16 || len(op.Error) > math.MaxUint16
	return r, rare
}

// NewRecorder starts the clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is nanoseconds since the recorder started (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the wall-clock instant of time zero.
func (r *Recorder) Start() time.Time { return r.start }

// Add stamps op with the current time and an index, appends it and returns it.
func (r *Recorder) Add(op Op) Op {
	rec, rare := pack(&op) // outside the lock: only the time, index and places are set under it
	r.mu.Lock()
	if r.ended {
		// After the end record nothing belongs to the history (a
		// watchdog's late step while the run shuts down).
		r.mu.Unlock()
		return op
	}
	op.Time, op.Index = r.addLocked(&rec, rare, &op)
	r.mu.Unlock()
	return op
}

func (r *Recorder) addLocked(rec *recOp, rare bool, op *Op) (t int64, index int) {
	rec.time = int64(time.Since(r.start))
	if rare {
		r.rare = append(r.rare, rareFields{typ: op.Type, f: op.F, process: op.Process, client: op.Client,
			key: op.Key, value: op.Value, err: op.Error, node: op.Node, owner: op.Owner,
			targets: op.Targets, fired: op.Fired, tries: op.Tries, meta: op.Meta})
		rec.rare = uint32(len(r.rare))
		rec.keyLen, rec.valueLen, rec.errLen = 0, 0, 0
	} else {
		r.putStrings(rec, op)
	}
	if r.n%recorderChunk == 0 {
		r.chunks = append(r.chunks, make([]recOp, 0, recorderChunk))
	}
	last := len(r.chunks) - 1
	r.chunks[last] = append(r.chunks[last], *rec)
	r.n++
	return rec.time, r.n - 1
}

// putStrings copies the entry's key, value and error to the end of the
// last string block (a new one when they do not fit).
func (r *Recorder) putStrings(rec *recOp, op *Op) {
	size := len(op.Key) + len(op.Value) + len(op.Error)
	if size == 0 {
		return
	}
	last := len(r.bytes) - 1
	if last < 0 || cap(r.bytes[last])-len(r.bytes[last]) < size {
		r.bytes = append(r.bytes, make([]byte, 0, max(recorderBytes, size)))
		last++
	}
	b := r.bytes[last]
	rec.block, rec.off = uint32(last), uint32(len(b))
	b = append(b, op.Key...)
	b = append(b, op.Value...)
	r.bytes[last] = append(b, op.Error...)
}

// str is n bytes of block at off, as a string that shares the block: the
// block's bytes are never written again.
func str(block []byte, off, n int) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&block[off], n)
}

func (r *Recorder) unpack(rec *recOp, index int) Op {
	op := Op{Index: index, Time: rec.time, N: rec.n, Fence: rec.fence, Process: int(rec.process),
		Client: int(rec.client), ErrorReply: rec.errorReply}
	if rec.typ != noCode {
		op.Type = recTypes[rec.typ]
	}
	if rec.f != noCode {
		op.F = recFuncs[rec.f]
	}
	if rec.rare != 0 {
		x := &r.rare[rec.rare-1]
		op.Type, op.F, op.Process, op.Client = x.typ, x.f, x.process, x.client
		op.Key, op.Value, op.Error = x.key, x.value, x.err
		op.Node, op.Owner, op.Targets, op.Fired, op.Tries, op.Meta = x.node, x.owner, x.targets, x.fired, x.tries, x.meta
		return op
	}
	if rec.keyLen+rec.valueLen+rec.errLen > 0 {
		b, off := r.bytes[rec.block], int(rec.off)
		k, v := int(rec.keyLen), int(rec.valueLen)
		op.Key = str(b, off, k)
		op.Value = str(b, off+k, v)
		op.Error = str(b, off+k+v, int(rec.errLen))
	}
	return op
}

// End adds the end record op (F FEnd) as the last entry, ignores every Add
// after it, and returns the history: nothing a straggling goroutine records
// can land after the end record.
func (r *Recorder) End(op Op) History {
	rec, rare := pack(&op)
	r.mu.Lock()
	if !r.ended {
		r.addLocked(&rec, rare, &op)
		r.ended = true
	}
	r.mu.Unlock()
	return r.History()
}

// History returns a copy of what was recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make(History, 0, r.n)
	for _, c := range r.chunks {
		for i := range c {
			h = append(h, r.unpack(&c[i], len(h)))
		}
	}
	return h
}
