package zkproto

import "fmt"

// Op is a request type: the opcode in a RequestHeader, and the type of a
// transaction in the log (docs/zookeeper-protocol.md §2.1).
type Op int32

// Opcodes.
const (
	OpNotification         Op = 0
	OpCreate               Op = 1
	OpDelete               Op = 2
	OpExists               Op = 3
	OpGetData              Op = 4
	OpSetData              Op = 5
	OpGetACL               Op = 6
	OpSetACL               Op = 7
	OpGetChildren          Op = 8
	OpSync                 Op = 9
	OpPing                 Op = 11
	OpGetChildren2         Op = 12
	OpCheck                Op = 13
	OpMulti                Op = 14
	OpCreate2              Op = 15
	OpReconfig             Op = 16
	OpCheckWatches         Op = 17
	OpRemoveWatches        Op = 18
	OpCreateContainer      Op = 19
	OpDeleteContainer      Op = 20
	OpCreateTTL            Op = 21
	OpMultiRead            Op = 22
	OpAuth                 Op = 100
	OpSetWatches           Op = 101
	OpSASL                 Op = 102
	OpGetEphemerals        Op = 103
	OpGetAllChildrenNumber Op = 104
	OpSetWatches2          Op = 105
	OpAddWatch             Op = 106
	OpWhoAmI               Op = 107
	OpCreateSession        Op = -10
	OpCloseSession         Op = -11
	OpError                Op = -1
)

// Reserved xids (docs/zookeeper-protocol.md §1.4).
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)

var opNames = map[Op]string{
	OpNotification: "notification", OpCreate: "create", OpDelete: "delete",
	OpExists: "exists", OpGetData: "getData", OpSetData: "setData",
	OpGetACL: "getACL", OpSetACL: "setACL", OpGetChildren: "getChildren",
	OpSync: "sync", OpPing: "ping", OpGetChildren2: "getChildren2",
	OpCheck: "check", OpMulti: "multi", OpCreate2: "create2",
	OpReconfig: "reconfig", OpCheckWatches: "checkWatches",
	OpRemoveWatches: "removeWatches", OpCreateContainer: "createContainer",
	OpDeleteContainer: "deleteContainer", OpCreateTTL: "createTTL",
	OpMultiRead: "multiRead", OpAuth: "auth", OpSetWatches: "setWatches",
	OpSASL: "sasl", OpGetEphemerals: "getEphemerals",
	OpGetAllChildrenNumber: "getAllChildrenNumber", OpSetWatches2: "setWatches2",
	OpAddWatch: "addWatch", OpWhoAmI: "whoAmI", OpCreateSession: "createSession",
	OpCloseSession: "closeSession", OpError: "error",
}

// String returns the opcode's name as the Java client's OpCode calls it.
func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Op(%d)", int32(o))
}

// ShortName is the four-letter name the cons 4lw shows as lop (docs/zookeeper-protocol.md §8.2).
func (o Op) ShortName() string {
	switch o {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL:
		return "CREA"
	case OpDelete, OpDeleteContainer:
		return "DELE"
	case OpSetData:
		return "SETD"
	case OpGetData:
		return "GETD"
	case OpExists:
		return "EXIS"
	case OpGetChildren, OpGetChildren2:
		return "GETC"
	case OpSetACL:
		return "SETA"
	case OpGetACL:
		return "GETA"
	case OpSync:
		return "SYNC"
	case OpPing:
		return "PING"
	case OpCreateSession:
		return "SESS"
	case OpCloseSession:
		return "CLOS"
	case OpMulti:
		return "MULT"
	case OpMultiRead:
		return "MLTR"
	case OpSetWatches:
		return "SETW"
	case OpSetWatches2:
		return "STW2"
	case OpAddWatch:
		return "ADDW"
	case OpCheckWatches:
		return "CHKW"
	case OpRemoveWatches:
		return "REMW"
	case OpGetEphemerals:
		return "GETE"
	case OpWhoAmI:
		return "HOMI"
	case OpGetAllChildrenNumber:
		return "GETACN"
	case OpReconfig:
		return "RECO"
	case OpCheck:
		return "CHEC"
	}
	return "NA"
}

// IsWrite reports whether o changes the tree or the session table, and so
// becomes a transaction.
func (o Op) IsWrite() bool {
	switch o {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete,
		OpDeleteContainer, OpSetData, OpSetACL, OpMulti, OpReconfig,
		OpCreateSession, OpCloseSession, OpCheck:
		return true
	}
	return false
}
