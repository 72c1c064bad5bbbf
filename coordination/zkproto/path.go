package zkproto

import "strings"

// ValidatePath checks a znode path against the server's rules (docs/zookeeper-protocol.md §2.5)
// and returns a *Error with CodeBadArguments and Path set if it breaks one.
// A valid path
//   - is non-empty and starts with '/';
//   - is exactly "/" or does not end with '/';
//   - has no empty component ("//") and no component "." or "..";
//   - holds no NUL and no character in U+0001–U+001F, U+007F–U+009F,
//     U+D800–U+F8FF or U+FFF0–U+FFFF.
//
// The Java server applies the character rule to UTF-16 code units of a
// string it decoded from UTF-8 with replacement. ValidatePath mirrors what
// that means for Go's bytes: invalid UTF-8 reads as U+FFFD, which is in the
// forbidden range U+FFF0–U+FFFF, so it is rejected; and a character above
// U+FFFF is a surrogate pair in Java, in the forbidden range U+D800–U+F8FF,
// so it is rejected too.
func ValidatePath(path string) error {
	if !validPath(path) {
		return &Error{Code: CodeBadArguments, Path: path}
	}
	return nil
}

// validPath implements ValidatePath's rules without allocating.
func validPath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if path == "/" {
		return true
	}
	if path[len(path)-1] == '/' {
		return false
	}
	rest := path[1:]
	for rest != "" {
		comp, tail, _ := strings.Cut(rest, "/")
		if comp == "" || comp == "." || comp == ".." {
			return false
		}
		rest = tail
	}
	for _, r := range path {
		if !validPathRune(r) {
			return false
		}
	}
	return true
}

// validPathRune reports whether r may appear in a path. Invalid UTF-8
// reaches here as U+FFFD and characters above U+FFFF as themselves; both
// fall under r >= 0xFFF0 (see ValidatePath for why that matches Java).
func validPathRune(r rune) bool {
	switch {
	case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
		return false
	}
	return true
}

// ParentPath returns the path of the parent of a valid path: the text before
// the last '/', or "/" for a child of the root. The root itself has no
// parent, and ParentPath("/") is "". For a path without '/' it returns "".
func ParentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0 || path == "/":
		return ""
	case i == 0:
		return "/"
	}
	return path[:i]
}

// BaseName returns the last component of a path: the text after the last
// '/'. BaseName("/") is "", and a path without '/' is returned unchanged.
func BaseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// ChildPath joins a parent path and a child name: ChildPath("/", "a") is
// "/a" and ChildPath("/a", "b") is "/a/b".
func ChildPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
