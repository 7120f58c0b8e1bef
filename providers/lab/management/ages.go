package management

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// restamp sets the creationTimestamp of every object stored in the
// management cluster's etcd (at etcdURL) to now: a lab started from a
// stored state is new, and kubectl's AGE of its namespaces, CRDs and
// system objects said when the state was stored (minutes or days
// before). It writes etcd under the API server, as no client can
// (creationTimestamp is the server's), each key only if no one wrote it
// since it was read; objects bound to an etcd lease (events) are left.
// It returns how many objects it changed.
func restamp(ctx context.Context, etcdURL string, now time.Time) (int, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 10 * time.Second, Context: ctx})
	if err != nil {
		return 0, fmt.Errorf("etcd %s: %w", etcdURL, err)
	}
	defer c.Close()
	resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read etcd: %w", err)
	}
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	changed, size := 0, 0
	flush := func() error {
		if len(puts) == 0 {
			return nil
		}
		r, err := c.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err != nil {
			return fmt.Errorf("write etcd: %w", err)
		}
		if r.Succeeded {
			changed += len(puts)
		} else {
			// A key was written meanwhile (the API server's own
			// leases): each of the batch on its own, that one left.
			for i := range puts {
				r, err := c.Txn(ctx).If(cmps[i]).Then(puts[i]).Commit()
				if err != nil {
					return fmt.Errorf("write etcd: %w", err)
				}
				if r.Succeeded {
					changed++
				}
			}
		}
		cmps, puts, size = cmps[:0], puts[:0], 0
		return nil
	}
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 {
			continue
		}
		v, ok, err := restampValue(kv.Value, now)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", kv.Key, err)
		}
		if !ok {
			continue
		}
		// etcd takes at most 128 operations and 1.5 MiB a transaction
		// (--max-request-bytes); a CRD alone can be half of that.
		if len(puts) == 64 || size+len(kv.Key)+len(v) > txnBytes {
			if err := flush(); err != nil {
				return changed, err
			}
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		puts = append(puts, clientv3.OpPut(string(kv.Key), string(v)))
		size += len(kv.Key) + len(v)
	}
	return changed, flush()
}

// txnBytes bounds the keys and values of one transaction of restamp,
// under etcd's default request limit (1.5 MiB) and its client's (2 MiB).
const txnBytes = 1 << 20

// protoMagic begins every object the API server stores as protobuf (a
// runtime.Unknown wrapping the typed object); JSON objects (custom
// resources) begin with '{'.
var protoMagic = []byte("k8s\x00")

// restampValue is value with its object's creationTimestamp set to now,
// and whether it had one. In protobuf, every API object's metadata is its
// field 1, an ObjectMeta whose creationTimestamp is field 8 (a Time of
// seconds and nanos; generated.proto of apimachinery's meta/v1).
func restampValue(value []byte, now time.Time) ([]byte, bool, error) {
	switch {
	case bytes.HasPrefix(value, protoMagic):
		stamp := protowire.AppendTag(nil, 1, protowire.VarintType)
		stamp = protowire.AppendVarint(stamp, uint64(now.Unix()))
		found := false
		out, err := rewriteField(value[len(protoMagic):], 2, func(raw []byte) ([]byte, error) {
			return rewriteField(raw, 1, func(meta []byte) ([]byte, error) {
				return rewriteField(meta, 8, func([]byte) ([]byte, error) {
					found = true
					return stamp, nil
				})
			})
		})
		if err != nil || !found {
			return nil, false, err
		}
		return append(append([]byte{}, protoMagic...), out...), true, nil
	case bytes.HasPrefix(value, []byte("{")):
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(value, &obj); err != nil {
			return nil, false, err
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta["creationTimestamp"] == nil {
			return nil, false, nil //nolint:nilerr // no metadata to stamp: left as it is
		}
		meta["creationTimestamp"], _ = json.Marshal(now.UTC().Format(time.RFC3339))
		var err error
		if obj["metadata"], err = json.Marshal(meta); err != nil {
			return nil, false, err
		}
		out, err := json.Marshal(obj)
		return append(out, '\n'), err == nil, err
	}
	return nil, false, nil
}

// rewriteField is msg (a protobuf message) with the value of each
// length-delimited field num replaced by f's; other fields are copied as
// they are.
func rewriteField(msg []byte, num protowire.Number, f func([]byte) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(msg)+16)
	for len(msg) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(msg)
		if tagLen < 0 {
			return nil, protowire.ParseError(tagLen)
		}
		valLen := protowire.ConsumeFieldValue(n, typ, msg[tagLen:])
		if valLen < 0 {
			return nil, protowire.ParseError(valLen)
		}
		if n != num || typ != protowire.BytesType {
			out = append(out, msg[:tagLen+valLen]...)
			msg = msg[tagLen+valLen:]
			continue
		}
		v, _ := protowire.ConsumeBytes(msg[tagLen:])
		nv, err := f(v)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, n, protowire.BytesType)
		out = protowire.AppendBytes(out, nv)
		msg = msg[tagLen+valLen:]
	}
	return out, nil
}
