package zkproto

import (
	"errors"
	"fmt"
)

// Code is the result code carried in every reply header. The values are
// fixed by the wire protocol and match KeeperException.Code in the Java
// server.
type Code int32

// Result codes (docs/zookeeper-protocol.md §4).
const (
	CodeOK                           Code = 0
	CodeSystemError                  Code = -1
	CodeRuntimeInconsistency         Code = -2
	CodeDataInconsistency            Code = -3
	CodeConnectionLoss               Code = -4
	CodeMarshallingError             Code = -5
	CodeUnimplemented                Code = -6
	CodeOperationTimeout             Code = -7
	CodeBadArguments                 Code = -8
	CodeUnknownSession               Code = -12
	CodeNewConfigNoQuorum            Code = -13
	CodeReconfigInProgress           Code = -14
	CodeAPIError                     Code = -100
	CodeNoNode                       Code = -101
	CodeNoAuth                       Code = -102
	CodeBadVersion                   Code = -103
	CodeNoChildrenForEphemerals      Code = -108
	CodeNodeExists                   Code = -110
	CodeNotEmpty                     Code = -111
	CodeSessionExpired               Code = -112
	CodeInvalidCallback              Code = -113
	CodeInvalidACL                   Code = -114
	CodeAuthFailed                   Code = -115
	CodeSessionMoved                 Code = -118
	CodeNotReadOnly                  Code = -119
	CodeEphemeralOnLocalSession      Code = -120
	CodeNoWatcher                    Code = -121
	CodeRequestTimeout               Code = -122
	CodeReconfigDisabled             Code = -123
	CodeSessionClosedRequireSaslAuth Code = -124
	CodeQuotaExceeded                Code = -125
	CodeThrottled                    Code = -127
)

var codeNames = map[Code]string{
	CodeOK:                           "OK",
	CodeSystemError:                  "SystemError",
	CodeRuntimeInconsistency:         "RuntimeInconsistency",
	CodeDataInconsistency:            "DataInconsistency",
	CodeConnectionLoss:               "ConnectionLoss",
	CodeMarshallingError:             "MarshallingError",
	CodeUnimplemented:                "Unimplemented",
	CodeOperationTimeout:             "OperationTimeout",
	CodeBadArguments:                 "BadArguments",
	CodeUnknownSession:               "UnknownSession",
	CodeNewConfigNoQuorum:            "NewConfigNoQuorum",
	CodeReconfigInProgress:           "ReconfigInProgress",
	CodeAPIError:                     "APIError",
	CodeNoNode:                       "NoNode",
	CodeNoAuth:                       "NoAuth",
	CodeBadVersion:                   "BadVersion",
	CodeNoChildrenForEphemerals:      "NoChildrenForEphemerals",
	CodeNodeExists:                   "NodeExists",
	CodeNotEmpty:                     "NotEmpty",
	CodeSessionExpired:               "SessionExpired",
	CodeInvalidCallback:              "InvalidCallback",
	CodeInvalidACL:                   "InvalidACL",
	CodeAuthFailed:                   "AuthFailed",
	CodeSessionMoved:                 "SessionMoved",
	CodeNotReadOnly:                  "NotReadOnly",
	CodeEphemeralOnLocalSession:      "EphemeralOnLocalSession",
	CodeNoWatcher:                    "NoWatcher",
	CodeRequestTimeout:               "RequestTimeout",
	CodeReconfigDisabled:             "ReconfigDisabled",
	CodeSessionClosedRequireSaslAuth: "SessionClosedRequireSaslAuth",
	CodeQuotaExceeded:                "QuotaExceeded",
	CodeThrottled:                    "Throttled",
}

// String returns the Java name of the code, or the number if unknown.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Code(%d)", int32(c))
}

// Error is an API outcome the client can act on, such as "no node".
type Error struct {
	Code Code
	Path string // for messages and logs; empty in the sentinels below
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "zk: " + e.Code.String()
	}
	return "zk: " + e.Code.String() + " for " + e.Path
}

// Is lets errors.Is(err, ErrNoNode) match any *Error with that code,
// whatever its path.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Path == "" && t.Code == e.Code
}

// Errorf returns an *Error with the given code and path.
func Errorf(c Code, path string) *Error { return &Error{Code: c, Path: path} }

// Sentinels for errors.Is. Return Errorf(code, path) to add the path.
var (
	ErrSystemError             = &Error{Code: CodeSystemError}
	ErrRuntimeInconsistency    = &Error{Code: CodeRuntimeInconsistency}
	ErrMarshallingError        = &Error{Code: CodeMarshallingError}
	ErrUnimplemented           = &Error{Code: CodeUnimplemented}
	ErrBadArguments            = &Error{Code: CodeBadArguments}
	ErrNoNode                  = &Error{Code: CodeNoNode}
	ErrNoAuth                  = &Error{Code: CodeNoAuth}
	ErrBadVersion              = &Error{Code: CodeBadVersion}
	ErrNoChildrenForEphemerals = &Error{Code: CodeNoChildrenForEphemerals}
	ErrNodeExists              = &Error{Code: CodeNodeExists}
	ErrNotEmpty                = &Error{Code: CodeNotEmpty}
	ErrSessionExpired          = &Error{Code: CodeSessionExpired}
	ErrInvalidACL              = &Error{Code: CodeInvalidACL}
	ErrAuthFailed              = &Error{Code: CodeAuthFailed}
	ErrSessionMoved            = &Error{Code: CodeSessionMoved}
	ErrNotReadOnly             = &Error{Code: CodeNotReadOnly}
	ErrNoWatcher               = &Error{Code: CodeNoWatcher}
	ErrReconfigDisabled        = &Error{Code: CodeReconfigDisabled}
)

// CodeOf returns the code to send for err. API errors keep their code; any
// other error is an internal failure, reported to the client as SystemError.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var zerr *Error
	if errors.As(err, &zerr) {
		return zerr.Code
	}
	return CodeSystemError
}
