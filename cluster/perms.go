package cluster

// Permissions name what each role may publish and subscribe to in NATS, as
// docs/cluster.md documents them; the tests run replicas and workers under
// exactly these.
type Permissions struct {
	Publish   []string
	Subscribe []string
	// Responses allows answering requests received, and nothing else
	// unless Publish says so.
	Responses bool
}

// jsAPI is what a role needs of the JetStream API for one stream (a KV
// bucket and an object store are streams named KV_<bucket> and
// OBJ_<store>): to look it up and create it, to read it through consumers,
// and to get single messages from it.
func jsAPI(stream string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.STREAM.CREATE." + stream,
		"$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.STREAM.PURGE." + stream,
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.DIRECT.GET." + stream,
		"$JS.API.DIRECT.GET." + stream + ".>",
		"$JS.API.CONSUMER.CREATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DELETE." + stream + ".>",
		"$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
	}
}

// ReplicaPermissions is what a replica needs: to send fleet calls, publish
// its rows and read everyone's, and read and write the registry's bucket,
// lock bucket, failure case bucket and source store, the user bucket, and
// the trace stream.
func ReplicaPermissions() Permissions {
	pub := []string{
		FleetRun, FleetCompile,
		FleetBackPrefix + ">", // answers to the tools' calls of tools
		RowSubjectPrefix + ">",
		"$KV." + ToolBucket + ".>",
		"$KV." + LockBucket + ".>",
		"$KV." + UserBucket + ".>",
		"$KV." + FailureBucket + ".>",
		traceSubjects,
		"$O." + SourceStore + ".>",
		"$JS.API.INFO",
		"$JS.FC.>", // flow control of the watches' push consumers
	}
	for _, s := range []string{RowStream, TraceStream, "KV_" + ToolBucket, "KV_" + LockBucket, "KV_" + UserBucket, "KV_" + FailureBucket, "OBJ_" + SourceStore} {
		pub = append(pub, jsAPI(s)...)
	}
	return Permissions{Publish: pub, Subscribe: []string{"_INBOX.>", FleetNestedPrefix + ">"}}
}

// WorkerPermissions is what a fleet worker needs: to take calls from the
// queue group and answer them, and to send the calls its tools make of
// other tools to the replica that sent the call and hear the answers.
// Nothing else: no JetStream, so a worker can neither read nor write the
// registry, the sources or the rows.
func WorkerPermissions() Permissions {
	return Permissions{Publish: []string{FleetNestedPrefix + ">"}, Subscribe: []string{FleetRun, FleetCompile, FleetBackPrefix + ">"}, Responses: true}
}
