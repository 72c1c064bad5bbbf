// Package txn defines ZooKeeper's replicated transaction records and their
// byte-exact encoding: the payload of every txn log record, of every Zab
// proposal and of every committed write (docs/zookeeper-protocol.md §9.3).
//
// A payload is a header, the record its type selects, and an optional
// digest trailer:
//
//	+------------------------------- TxnHeader (32 bytes) ------------------------------+
//	| clientId int64 | cxid int32 | zxid int64 | time int64 (ms) | type int32          |
//	+-----------------------------------------------------------------------------------+
//	| record by type (none for a pre-3.6 closeSession)                                  |
//	+-----------------------------------------------------------------------------------+
//	| optional TxnDigest (12 bytes): version int32 (=2) | treeDigest int64              |
//	+-----------------------------------------------------------------------------------+
//
// Records by header type:
//
//	create(1), create2(15)   Create          path, data, acl, ephemeral, parentCVersion
//	createContainer(19)      CreateContainer path, data, acl, parentCVersion
//	createTTL(21)            CreateTTL       path, data, acl, parentCVersion, ttl
//	delete(2), deleteContainer(20)  Delete   path
//	setData(5), reconfig(16) SetData         path, data, version (the new version)
//	setACL(7)                SetACL          path, acl, version (the new aversion)
//	multi(14)                Multi           vector<{type int32; data buffer}>
//	createSession(-10)       CreateSession   timeOut
//	closeSession(-11)        CloseSession    vector<ustring> paths2Delete (absent before 3.6)
//	error(-1)                Error           err
//
// Inside a multi each sub-txn's data buffer holds one serialized record of
// type create, create2, createContainer, createTTL, delete, deleteContainer,
// setData, check (CheckVersion: path, version) or error; these are the sub
// types ZooKeeper's DataTree can replay.
//
// Three legacy or optional shapes are recognised by length, because the
// format has no tags:
//
//   - The digest trailer is present exactly when bytes remain after the
//     record. Error txns never carry one in practice, but any record may.
//   - A pre-3.3 CreateTxnV0 lacks parentCVersion. A create record is read as
//     V0 exactly when its bytes end right after the ephemeral flag, which is
//     how every V0 record in a pre-3.3 log looks (such logs predate the
//     digest trailer, so nothing can follow). V0 records decode with
//     ParentCversion -1, meaning "the parent's stored cversion plus one", and
//     Create.V0 set so that they re-encode to the same bytes.
//   - A closeSession written before 3.6 (or with closeSession txns disabled)
//     has no record. An empty remainder, or a remainder of exactly 12 bytes
//     that does not parse as a CloseSessionTxn and so must be a bare digest,
//     decodes as CloseSession{NoBody: true}, which re-encodes to no bytes.
package txn
