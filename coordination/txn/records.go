package txn

import (
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Create is CreateTxn, the record of create(1) and create2(15). Write ops
// record post-validation values: the final (sequential) path, the fixed-up
// ACL and the parent's new stored cversion.
type Create struct {
	Path string
	Data []byte // nil (null) and empty are distinct
	ACL  []zkproto.ACL
	// Ephemeral makes the header's ClientID the node's owner.
	Ephemeral bool
	// ParentCversion is the parent's stored cversion after this create;
	// -1 means "the parent's current stored cversion plus one".
	ParentCversion int32
	// V0 marks a pre-3.3 CreateTxnV0, which has no parentCVersion field;
	// it decodes with ParentCversion -1 and encodes without the field.
	V0 bool
}

// Encode implements jute.Record.
func (c *Create) Encode(e *jute.Encoder) {
	e.String(c.Path)
	e.Buffer(c.Data)
	zkproto.EncodeACLs(e, c.ACL)
	e.Bool(c.Ephemeral)
	if !c.V0 {
		e.Int(c.ParentCversion)
	}
}

// Decode implements jute.Record. A record whose bytes end right after the
// ephemeral flag is a CreateTxnV0 (see the package doc).
func (c *Create) Decode(d *jute.Decoder) {
	c.Path = d.String()
	c.Data = d.Buffer()
	c.ACL = zkproto.DecodeACLs(d)
	c.Ephemeral = d.Bool()
	if d.Err() == nil && d.Remaining() == 0 {
		c.V0, c.ParentCversion = true, -1
		return
	}
	c.V0 = false
	c.ParentCversion = d.Int()
}

// CreateContainer is CreateContainerTxn, the record of createContainer(19).
type CreateContainer struct {
	Path           string
	Data           []byte
	ACL            []zkproto.ACL
	ParentCversion int32 // as in Create
}

// Encode implements jute.Record.
func (c *CreateContainer) Encode(e *jute.Encoder) {
	e.String(c.Path)
	e.Buffer(c.Data)
	zkproto.EncodeACLs(e, c.ACL)
	e.Int(c.ParentCversion)
}

// Decode implements jute.Record.
func (c *CreateContainer) Decode(d *jute.Decoder) {
	c.Path = d.String()
	c.Data = d.Buffer()
	c.ACL = zkproto.DecodeACLs(d)
	c.ParentCversion = d.Int()
}

// CreateTTL is CreateTTLTxn, the record of createTTL(21).
type CreateTTL struct {
	Path           string
	Data           []byte
	ACL            []zkproto.ACL
	ParentCversion int32 // as in Create
	TTL            int64 // ms; valid values are 1 through 0xFFFFFFFFFF
}

// Encode implements jute.Record.
func (c *CreateTTL) Encode(e *jute.Encoder) {
	e.String(c.Path)
	e.Buffer(c.Data)
	zkproto.EncodeACLs(e, c.ACL)
	e.Int(c.ParentCversion)
	e.Long(c.TTL)
}

// Decode implements jute.Record.
func (c *CreateTTL) Decode(d *jute.Decoder) {
	c.Path = d.String()
	c.Data = d.Buffer()
	c.ACL = zkproto.DecodeACLs(d)
	c.ParentCversion = d.Int()
	c.TTL = d.Long()
}

// Delete is DeleteTxn, the record of delete(2) and deleteContainer(20).
type Delete struct {
	Path string
}

// Encode implements jute.Record.
func (r *Delete) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *Delete) Decode(d *jute.Decoder) { r.Path = d.String() }

// SetData is SetDataTxn, the record of setData(5) and reconfig(16).
type SetData struct {
	Path    string
	Data    []byte
	Version int32 // the node's new data version
}

// Encode implements jute.Record.
func (r *SetData) Encode(e *jute.Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.Int(r.Version)
}

// Decode implements jute.Record.
func (r *SetData) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// SetACL is SetACLTxn, the record of setACL(7).
type SetACL struct {
	Path    string
	ACL     []zkproto.ACL
	Version int32 // the node's new aversion
}

// Encode implements jute.Record.
func (r *SetACL) Encode(e *jute.Encoder) {
	e.String(r.Path)
	zkproto.EncodeACLs(e, r.ACL)
	e.Int(r.Version)
}

// Decode implements jute.Record.
func (r *SetACL) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.ACL = zkproto.DecodeACLs(d)
	r.Version = d.Int()
}

// CheckVersion is CheckVersionTxn, the record of a check(13) that passed
// inside a multi. It changes nothing.
type CheckVersion struct {
	Path    string
	Version int32 // the checked version plus one, as the Java server writes it
}

// Encode implements jute.Record.
func (r *CheckVersion) Encode(e *jute.Encoder) {
	e.String(r.Path)
	e.Int(r.Version)
}

// Decode implements jute.Record.
func (r *CheckVersion) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Version = d.Int()
}

// CreateSession is CreateSessionTxn, the record of createSession(-10).
type CreateSession struct {
	TimeoutMs int32 // the negotiated session timeout
}

// Encode implements jute.Record.
func (r *CreateSession) Encode(e *jute.Encoder) { e.Int(r.TimeoutMs) }

// Decode implements jute.Record.
func (r *CreateSession) Decode(d *jute.Decoder) { r.TimeoutMs = d.Int() }

// CloseSession is CloseSessionTxn, the record of closeSession(-11).
type CloseSession struct {
	// Paths lists the ephemerals to delete, in the order the leader listed
	// them. A null vector decodes as nil.
	Paths []string
	// NoBody marks a closeSession written without a record (before 3.6, or
	// with closeSession txns disabled). Paths is then nil, and Encode
	// writes nothing so the payload re-encodes to the same bytes.
	NoBody bool
}

// Encode implements jute.Record.
func (r *CloseSession) Encode(e *jute.Encoder) {
	if r.NoBody {
		return
	}
	e.Strings(r.Paths)
}

// Decode implements jute.Record. It always reads a body; Unmarshal decides
// beforehand whether the payload has one.
func (r *CloseSession) Decode(d *jute.Decoder) {
	r.NoBody = false
	r.Paths = d.Strings()
}

// Error is ErrorTxn, the record of error(-1): a write that failed still
// consumes a zxid. Inside a failed multi, sub-txns before the failing one
// carry 0, the failing one its code and later ones -2.
type Error struct {
	Err int32 // a zkproto.Code value
}

// Encode implements jute.Record.
func (r *Error) Encode(e *jute.Encoder) { e.Int(r.Err) }

// Decode implements jute.Record.
func (r *Error) Decode(d *jute.Decoder) { r.Err = d.Int() }
