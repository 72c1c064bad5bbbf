package zkproto

import "keeper/coordination/jute"

// This file holds the request and response records of the znode operations
// (docs/zookeeper-protocol.md §2.2). Each record encodes its fields in declaration order; the
// comment on each type shows the jute layout.

// CreateRequest is the body of create(1), create2(15) and
// createContainer(19).
//
//	path ustring | data buffer | acl vector<ACL> | flags int
type CreateRequest struct {
	Path  string
	Data  []byte // nil (null) is distinct from empty
	ACL   []ACL
	Flags int32 // a Flag* CreateMode value
}

// Encode implements jute.Record.
func (r *CreateRequest) Encode(e *jute.Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

// Decode implements jute.Record.
func (r *CreateRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
}

// CreateTTLRequest is the body of createTTL(21).
//
//	path ustring | data buffer | acl vector<ACL> | flags int | ttl long
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTLMs int64 // time to live in milliseconds
}

// Encode implements jute.Record.
func (r *CreateTTLRequest) Encode(e *jute.Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
	e.Long(r.TTLMs)
}

// Decode implements jute.Record.
func (r *CreateTTLRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
	r.TTLMs = d.Long()
}

// CreateResponse answers create(1) with the actual path, which includes the
// sequence suffix for sequential nodes.
//
//	path ustring
type CreateResponse struct {
	Path string
}

// Encode implements jute.Record.
func (r *CreateResponse) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *CreateResponse) Decode(d *jute.Decoder) { r.Path = d.String() }

// Create2Response answers create2(15), createContainer(19) and
// createTTL(21).
//
//	path ustring | stat Stat
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode implements jute.Record.
func (r *Create2Response) Encode(e *jute.Encoder) { e.String(r.Path); r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *Create2Response) Decode(d *jute.Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// DeleteRequest is the body of delete(2). Its reply has no body.
//
//	path ustring | version int
type DeleteRequest struct {
	Path    string
	Version int32 // -1 matches any version
}

// Encode implements jute.Record.
func (r *DeleteRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode implements jute.Record.
func (r *DeleteRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Version = d.Int() }

// ExistsRequest is the body of exists(3).
//
//	path ustring | watch boolean
type ExistsRequest struct {
	Path  string
	Watch bool // set a data watch, even if the node does not exist
}

// Encode implements jute.Record.
func (r *ExistsRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode implements jute.Record.
func (r *ExistsRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// ExistsResponse answers exists(3) for a node that exists.
//
//	stat Stat
type ExistsResponse struct {
	Stat Stat
}

// Encode implements jute.Record.
func (r *ExistsResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *ExistsResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetDataRequest is the body of getData(4).
//
//	path ustring | watch boolean
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode implements jute.Record.
func (r *GetDataRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode implements jute.Record.
func (r *GetDataRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// GetDataResponse answers getData(4) and reconfig(16).
//
//	data buffer | stat Stat
type GetDataResponse struct {
	Data []byte // nil for a node created with null data (length -1 on the wire)
	Stat Stat
}

// Encode implements jute.Record.
func (r *GetDataResponse) Encode(e *jute.Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *GetDataResponse) Decode(d *jute.Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// SetDataRequest is the body of setData(5).
//
//	path ustring | data buffer | version int
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32 // -1 matches any version
}

// Encode implements jute.Record.
func (r *SetDataRequest) Encode(e *jute.Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.Int(r.Version)
}

// Decode implements jute.Record.
func (r *SetDataRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// SetDataResponse answers setData(5) with the node's new Stat.
//
//	stat Stat
type SetDataResponse struct {
	Stat Stat
}

// Encode implements jute.Record.
func (r *SetDataResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *SetDataResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetACLRequest is the body of getACL(6).
//
//	path ustring
type GetACLRequest struct {
	Path string
}

// Encode implements jute.Record.
func (r *GetACLRequest) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *GetACLRequest) Decode(d *jute.Decoder) { r.Path = d.String() }

// GetACLResponse answers getACL(6).
//
//	acl vector<ACL> | stat Stat
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode implements jute.Record.
func (r *GetACLResponse) Encode(e *jute.Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *GetACLResponse) Decode(d *jute.Decoder) { r.ACL = DecodeACLs(d); r.Stat.Decode(d) }

// SetACLRequest is the body of setACL(7).
//
//	path ustring | acl vector<ACL> | version int
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32 // compared with the node's aversion; -1 matches any
}

// Encode implements jute.Record.
func (r *SetACLRequest) Encode(e *jute.Encoder) {
	e.String(r.Path)
	EncodeACLs(e, r.ACL)
	e.Int(r.Version)
}

// Decode implements jute.Record.
func (r *SetACLRequest) Decode(d *jute.Decoder) {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int()
}

// SetACLResponse answers setACL(7) with the node's new Stat.
//
//	stat Stat
type SetACLResponse struct {
	Stat Stat
}

// Encode implements jute.Record.
func (r *SetACLResponse) Encode(e *jute.Encoder) { r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *SetACLResponse) Decode(d *jute.Decoder) { r.Stat.Decode(d) }

// GetChildrenRequest is the body of getChildren(8).
//
//	path ustring | watch boolean
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode implements jute.Record.
func (r *GetChildrenRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode implements jute.Record.
func (r *GetChildrenRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// GetChildrenResponse answers getChildren(8) with child names (not full
// paths).
//
//	children vector<ustring>
type GetChildrenResponse struct {
	Children []string
}

// Encode implements jute.Record.
func (r *GetChildrenResponse) Encode(e *jute.Encoder) { e.Strings(r.Children) }

// Decode implements jute.Record.
func (r *GetChildrenResponse) Decode(d *jute.Decoder) { r.Children = d.Strings() }

// GetChildren2Request is the body of getChildren2(12).
//
//	path ustring | watch boolean
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode implements jute.Record.
func (r *GetChildren2Request) Encode(e *jute.Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode implements jute.Record.
func (r *GetChildren2Request) Decode(d *jute.Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// GetChildren2Response answers getChildren2(12): child names and the
// parent's Stat.
//
//	children vector<ustring> | stat Stat
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode implements jute.Record.
func (r *GetChildren2Response) Encode(e *jute.Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }

// Decode implements jute.Record.
func (r *GetChildren2Response) Decode(d *jute.Decoder) { r.Children = d.Strings(); r.Stat.Decode(d) }

// SyncRequest is the body of sync(9).
//
//	path ustring
type SyncRequest struct {
	Path string
}

// Encode implements jute.Record.
func (r *SyncRequest) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *SyncRequest) Decode(d *jute.Decoder) { r.Path = d.String() }

// SyncResponse answers sync(9) by echoing the path.
//
//	path ustring
type SyncResponse struct {
	Path string
}

// Encode implements jute.Record.
func (r *SyncResponse) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *SyncResponse) Decode(d *jute.Decoder) { r.Path = d.String() }

// CheckVersionRequest is the body of check(13), valid only inside multi
// (docs/zookeeper-protocol.md §2.4).
//
//	path ustring | version int
type CheckVersionRequest struct {
	Path    string
	Version int32 // -1 matches any version
}

// Encode implements jute.Record.
func (r *CheckVersionRequest) Encode(e *jute.Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode implements jute.Record.
func (r *CheckVersionRequest) Decode(d *jute.Decoder) { r.Path = d.String(); r.Version = d.Int() }

// DeleteContainerRequest is the body of deleteContainer(20), which only the
// server's container reaper generates. The path is a buffer, not a ustring.
//
//	path buffer
type DeleteContainerRequest struct {
	Path []byte // UTF-8 path bytes
}

// Encode implements jute.Record.
func (r *DeleteContainerRequest) Encode(e *jute.Encoder) { e.Buffer(r.Path) }

// Decode implements jute.Record.
func (r *DeleteContainerRequest) Decode(d *jute.Decoder) { r.Path = d.Buffer() }

// GetAllChildrenNumberRequest is the body of getAllChildrenNumber(104).
//
//	path ustring
type GetAllChildrenNumberRequest struct {
	Path string
}

// Encode implements jute.Record.
func (r *GetAllChildrenNumberRequest) Encode(e *jute.Encoder) { e.String(r.Path) }

// Decode implements jute.Record.
func (r *GetAllChildrenNumberRequest) Decode(d *jute.Decoder) { r.Path = d.String() }

// GetAllChildrenNumberResponse answers getAllChildrenNumber(104) with the
// count of all descendants of the node.
//
//	totalNumber int
type GetAllChildrenNumberResponse struct {
	TotalNumber int32
}

// Encode implements jute.Record.
func (r *GetAllChildrenNumberResponse) Encode(e *jute.Encoder) { e.Int(r.TotalNumber) }

// Decode implements jute.Record.
func (r *GetAllChildrenNumberResponse) Decode(d *jute.Decoder) { r.TotalNumber = d.Int() }

// GetEphemeralsRequest is the body of getEphemerals(103).
//
//	prefixPath ustring
type GetEphemeralsRequest struct {
	PrefixPath string // plain string prefix; "" or "/" selects all
}

// Encode implements jute.Record.
func (r *GetEphemeralsRequest) Encode(e *jute.Encoder) { e.String(r.PrefixPath) }

// Decode implements jute.Record.
func (r *GetEphemeralsRequest) Decode(d *jute.Decoder) { r.PrefixPath = d.String() }

// GetEphemeralsResponse answers getEphemerals(103) with full paths.
//
//	ephemerals vector<ustring>
type GetEphemeralsResponse struct {
	Ephemerals []string
}

// Encode implements jute.Record.
func (r *GetEphemeralsResponse) Encode(e *jute.Encoder) { e.Strings(r.Ephemerals) }

// Decode implements jute.Record.
func (r *GetEphemeralsResponse) Decode(d *jute.Decoder) { r.Ephemerals = d.Strings() }

// ReconfigRequest is the body of reconfig(16); its reply is a
// GetDataResponse holding the new configuration.
//
//	joiningServers ustring | leavingServers ustring | newMembers ustring |
//	curConfigId long
type ReconfigRequest struct {
	JoiningServers string // comma-separated server specs
	LeavingServers string // comma-separated server ids
	// NewMembers, when not nil, is the full replacement membership, and
	// the two above are ignored. Only null (nil) means an incremental
	// change: ZooKeeper's leader takes an empty newMembers as a
	// replacement by nothing, which it refuses.
	NewMembers  *string
	CurConfigID int64 // -1 = any configuration version
}

// Encode implements jute.Record.
func (r *ReconfigRequest) Encode(e *jute.Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	if r.NewMembers == nil {
		e.Buffer(nil)
	} else {
		e.String(*r.NewMembers)
	}
	e.Long(r.CurConfigID)
}

// Decode implements jute.Record.
func (r *ReconfigRequest) Decode(d *jute.Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = nil
	if b := d.Buffer(); b != nil {
		s := string(b)
		r.NewMembers = &s
	}
	r.CurConfigID = d.Long()
}

// ErrorResponse carries a result code in a body: the body of an error
// result inside a multi response, and the mandatory body of a successful
// addWatch(106) reply (ErrorResponse{CodeOK}, 4 zero bytes).
//
//	err int
type ErrorResponse struct {
	Err Code
}

// Encode implements jute.Record.
func (r *ErrorResponse) Encode(e *jute.Encoder) { e.Int(int32(r.Err)) }

// Decode implements jute.Record.
func (r *ErrorResponse) Decode(d *jute.Decoder) { r.Err = Code(d.Int()) }
