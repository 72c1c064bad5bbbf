package zoocfg

import "unicode/utf16"

// ZooKeeper 3.8 writes the servers of a configuration into /zookeeper/config
// in the iteration order of a java.util.HashMap keyed by server id, and
// fills that map in the iteration order of the java.util.Properties the
// configuration was read into (a ConcurrentHashMap of every key of the
// file). Neither order is sorted: ids 33, 17, 2 and 100 come out in that
// order (docs/zookeeper-protocol.md §5.6). These functions replay both hash
// tables so keeper writes the same bytes.
//
// Not replayed: a bin of eight or more colliding keys, which Java turns into
// a tree or answers by growing the table early. It needs eight keys of one
// file, or eight server ids, in one bin of the table; zoo.cfg files are far
// from that.

// javaStringHash is java.lang.String.hashCode: s as UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// propertiesOrder returns keys (in the order Properties.load put them;
// repeats keep their first place) in the order a Java 17
// ConcurrentHashMap(8), the table behind Properties, iterates them.
func propertiesOrder(keys []string) []string {
	type node struct {
		hash int32
		key  string
	}
	spread := func(h int32) int32 { return (h ^ int32(uint32(h)>>16)) & 0x7fffffff }
	n, sizeCtl := 16, 12 // ConcurrentHashMap(8): a table of 16, resized at 3/4
	table := make([][]node, n)
	seen := map[string]bool{}
	count := 0
	for _, k := range keys {
		if seen[k] {
			continue // put replaces the value in place
		}
		seen[k] = true
		h := spread(javaStringHash(k))
		i := int(h) & (n - 1)
		table[i] = append(table[i], node{h, k})
		count++
		for count >= sizeCtl {
			// transfer: each bin splits into bin i and bin i+n. The nodes
			// after the last change of side (lastRun) keep their order at
			// the tail; the ones before it are pushed on the front, so
			// they come out reversed.
			next := make([][]node, 2*n)
			for i, bin := range table {
				if len(bin) == 0 {
					continue
				}
				last := len(bin) - 1
				for last > 0 && (bin[last-1].hash&int32(n) == bin[len(bin)-1].hash&int32(n)) {
					last--
				}
				var lo, hi []node
				if bin[last].hash&int32(n) == 0 {
					lo = append(lo, bin[last:]...)
				} else {
					hi = append(hi, bin[last:]...)
				}
				for _, p := range bin[:last] {
					if p.hash&int32(n) == 0 {
						lo = append([]node{p}, lo...)
					} else {
						hi = append([]node{p}, hi...)
					}
				}
				next[i], next[i+n] = lo, hi
			}
			sizeCtl = 2*n - n/2
			n, table = 2*n, next
		}
	}
	out := make([]string, 0, count)
	for _, bin := range table {
		for _, p := range bin {
			out = append(out, p.key)
		}
	}
	return out
}

// hashMapOrder returns ids (in insertion order; repeats keep their first
// place) in the order a java.util.HashMap<Long, ...> of default capacity
// iterates them.
func hashMapOrder(ids []int64) []int64 {
	hash := func(v int64) int32 {
		h := int32(v ^ int64(uint64(v)>>32)) // Long.hashCode
		return h ^ int32(uint32(h)>>16)      // HashMap.hash
	}
	n, threshold := 16, 12
	table := make([][]int64, n)
	seen := map[int64]bool{}
	size := 0
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		i := int(hash(id)) & (n - 1)
		table[i] = append(table[i], id)
		size++
		if size > threshold {
			// resize: each bin splits into bin i and bin i+n, both in order.
			next := make([][]int64, 2*n)
			for i, bin := range table {
				for _, v := range bin {
					j := i
					if int(hash(v))&n != 0 {
						j += n
					}
					next[j] = append(next[j], v)
				}
			}
			n, threshold, table = 2*n, 2*threshold, next
		}
	}
	out := make([]int64, 0, size)
	for _, bin := range table {
		out = append(out, bin...)
	}
	return out
}

// serverOrder is the order ZooKeeper lists the server.N keys among keys, all
// the keys of one properties file in file order.
func serverOrder(keys []string) []int64 {
	var ids []int64
	for _, k := range propertiesOrder(keys) {
		if n, ok := cutServerKey(k); ok {
			if id, err := parseServerID(n); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return hashMapOrder(ids)
}

// cutServerKey returns the N of a server.N key.
func cutServerKey(key string) (string, bool) {
	if len(key) > len("server.") && key[:len("server.")] == "server." {
		return key[len("server."):], true
	}
	return "", false
}
