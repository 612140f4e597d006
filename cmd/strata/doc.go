// Command strata is the one binary: `strata server` runs a broker, and the
// other commands administer and use one with the Kafka protocol, as any
// client would.
//
//	strata server [flags]                    broker + admin HTTP + metadata voter
//	strata topic create NAME [flags]         --partitions, --replication-factor, --config k=v, --validate-only
//	strata topic list [flags]                topics; or the partitions one report keeps: --under-replicated, --unavailable, --under-min-isr, --at-min-isr
//	strata topic describe NAME... [flags]    partitions (leader, epoch, replicas, ISR, offline replicas), offsets, configs with sources
//	strata topic alter NAME [flags]          --set k=v, --delete k, --partitions N, --validate-only
//	strata topic delete NAME... [flags]
//	strata produce TOPIC [flags]             one record per stdin line; --key-separator, --header k=v, --partition, --acks, --compression
//	strata consume TOPIC [flags]             --from earliest|latest|OFFSET|@TIME, --partition, --follow, --max, --key-separator, --decode
//	strata group list [flags]                --state S,...
//	strata group describe GROUP... [flags]   members, lag per partition (records, time), stalled partitions; --admin
//	strata group delete GROUP... [flags]
//	strata group reset-offsets GROUP [flags] --to-earliest|--to-latest|--to-datetime T|--shift-by N, --topic; a dry run without --execute
//	strata cluster status [flags]            metadata voters, leader, term, commit index, brokers; partitions under-replicated, under min ISR, unavailable
//	strata tier status [TOPIC] [flags]       per tiered partition: local start, tiered end, bytes awaiting upload, last upload, last error; --admin, --json
//	strata user create|delete|list           SCRAM users (AlterUserScramCredentials); the password from --password-file or STRATA_NEW_USER_PASSWORD
//	strata acl create|list|delete            ACLs as kafka-acls.sh has them: --allow|--deny PRINCIPAL, --operation, --topic|--group|--cluster|--transactional-id, --prefixed
//	strata schema register|list|get|check|delete|config|mode
//	                                         the schema registry (Confluent's REST API, through franz-go's sr client): --registry, --file, --type, --reference, --version, --id, --permanent, --set
//	strata export --bucket URL --topic T --partition P [flags]
//	                                         old records straight from the bucket, no broker: --from OFFSET|--from-time T, --to OFFSET, --format json|raw
//	strata version [flags]                   version (a release's, stamped by `make release`, else the module's), Go version, platform, VCS revision when stamped (also --version)
//
// Each command lives in its own file and is one row of the table in
// main.go. Commands that talk to brokers take --bootstrap (env
// STRATA_BOOTSTRAP, default 127.0.0.1:9092) and --timeout, and, for a
// secured listener, --tls-ca (or --tls), --tls-cert and --tls-key,
// --sasl-mechanism, --sasl-user and the password from
// --sasl-password-file or STRATA_SASL_PASSWORD, never a flag value that
// shows in ps; those that read a server's admin address take --admin and
// --admin-token-file (or STRATA_ADMIN_TOKEN). Tables are the default
// output. A failure prints one line naming the problem and, when
// there is one, the fix, and exits 1; a bad command line exits 2.
//
// Help goes to standard output with exit 0 at every level: `strata -h`,
// `strata help [GROUP [COMMAND]]`, `strata topic -h`, `strata topic create
// -h` (help.go). A group named alone (`strata topic`) prints its help on
// standard output too, but exits 2, as the line said nothing to do.
//
// Every command takes --json: its output is JSON, and a failure is one
// JSON object on standard error instead of the line,
// {"command": "topic create", "error": "...", "hint": "...", "exit_code": 2},
// the hint omitted when no fix is known. (`strata server --json` logs as
// JSON; `strata export --json` keeps --format.)
//
// The CLI checks what it can before a request is sent (validate.go): topic
// names as Kafka's rules have them; counts and partition numbers against
// the Kafka field they travel in (an int32 partition count, an int16
// replication factor), so that none wraps; group states against Kafka's;
// export ranges against the bucket's manifest. What only the broker can
// judge it sends on, and prints the broker's message.
//
// # Replication health
//
// The replication reports are kafka-topics.sh's, judged from a Metadata
// answer (partition_health.go), so they are the cluster's view, not one
// broker's /metrics (whose strata_replica_* gauges count the partitions
// that broker leads). `strata topic list --under-replicated` lists the
// partitions whose ISR is smaller than their replica set; --unavailable
// those with no leader (-1, LEADER_NOT_AVAILABLE) or a leader that is not
// live; --under-min-isr those with no leader or an ISR smaller than the
// topic's min.insync.replicas (acks=all produces are refused);
// --at-min-isr those whose ISR is exactly min.insync.replicas. The last two
// read min.insync.replicas with one DescribeConfigs request. One report at
// a time, as kafka-topics.sh has it; a report that keeps nothing prints
// nothing (`[]` with --json) and exits 0. The columns are TOPIC,
// PARTITION, LEADER, EPOCH, REPLICAS, ISR, OFFLINE (and MIN-ISR), the JSON
// fields topic, partition, leader, leader_epoch, replicas, isr,
// offline_replicas (and min_insync_replicas). `strata cluster status`
// counts the under-replicated, under min ISR and unavailable partitions
// (not those at min ISR: every partition of a one-replica topic is),
// asking --bootstrap (default: the active brokers the admin document
// lists) for Metadata, and adds the counts to its JSON as "replication".
// The internal topic __consumer_offsets is left out of both.
//
// # Schema registry
//
// The schema commands (schema.go) talk to a Confluent-compatible schema
// registry, the one every `strata server` serves on
// --schema.registry.listen or Confluent's, through franz-go's sr client:
// --registry (env STRATA_REGISTRY, default 127.0.0.1:8081; HTTPS when a
// TLS flag is given, or as an https:// URL says), the TLS flags, and a
// credential, a user's password by HTTP Basic authentication
// (--sasl-user with --sasl-password-file or STRATA_SASL_PASSWORD, the
// user's SCRAM password) or else the admin token as a bearer token
// (--admin-token-file or STRATA_ADMIN_TOKEN). `schema register` prints the
// id and version (a schema the subject holds already gets its own back);
// `schema check` exits 1 when the schema is incompatible, listing why;
// `schema delete` soft-deletes, and --permanent then removes what was
// soft-deleted, as Confluent's registry has it. The registry's error
// codes come back in the words of what was asked, `subject "x" not found
// (40401)`, with the fix. `strata consume --decode` looks up the schema
// id that a key or value in the wire format (magic byte 0, a 4-byte id)
// names, once per id, with the schemas it references (by subject and
// version, transitively), parses it with package schema and prints the
// decoded JSON (a JSON value under --json, with key_schema_id and
// value_schema_id); bytes without the wire format print as they are. A
// record that does not decode is named on standard error with why (under
// --json, printed undecoded with key_error or value_error), the rest go
// on, and the command exits 1 once done; a registry that cannot be
// reached stops it.
//
// # Server
//
// With no flags, `strata server` is a working single node (DESIGN §8): the
// Kafka listener on 127.0.0.1:9092, admin HTTP on 127.0.0.1:9644, the
// metadata group's Raft on 127.0.0.1:9093 with this node its one voter,
// and data under ./strata-data. A second server on the same directory
// fails at once naming the process that holds it; a start with another
// --node-id than the directory's is refused naming both; a port that is
// taken is named by its flag (--listen, --admin-listen, --meta-listen):
//
//	strata-data/LOCK                        the running server's pid, flock(2)ed while it runs (data_dir.go)
//	strata-data/node-id                     the --node-id the directory was first started with
//	strata-data/meta/                       Raft log, stable store and snapshots (meta)
//	strata-data/partitions/<topic>-<n>/     one hot log per partition (hotlog, ingest)
//	strata-data/bucket/                     the default bucket (--bucket file://…), tiered segments (offload)
//
// # Tiered storage
//
// --bucket names the bucket (objstore URLs: file:///abs/dir,
// s3://bucket/prefix?region=…&endpoint=…&path_style=true,
// minio://host:port/bucket/prefix); credentials for S3 come from the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, or AWS's default
// chain; MINIO_ROOT_USER/MINIO_ROOT_PASSWORD for minio://).
// server_tiering.go opens it and builds offload's Manager (uploads,
// local and remote retention, the disk watch on the partitions directory)
// and remotefetch's Reader (old offsets), and hands both to the broker.
// remote.fetch.max.wait.ms bounds a Fetch's remote reads,
// remote.log.manager.task.interval.ms how often partitions are checked
// (sealing prompts an upload at once),
// remote.log.manager.copy.max.bytes.per.second a cap on the pace of
// uploads (none by default, as in Kafka), --remote-upload-drain a pace by
// the backlog (uploads read what awaits them over about 10 s, so a burst
// of seals does not take the disk from producers), --remote-cache-bytes
// the block cache, --remote-retire-delay how long objects that remote
// recompaction replaced stay for their readers. `strata export` needs only the bucket: it reads the manifest
// offload publishes there (remotefetch.OpenBucketReader).
//
// Every setting is a flag; any of them may also be given in a file named by
// --config, one `name = value` per line under the flag's name ('#' starts a
// comment); flags on the command line win. Kafka broker settings keep
// Kafka's names (socket.request.max.bytes, queued.max.requests,
// queued.max.request.bytes, auto.create.topics.enable, num.partitions,
// fetch.max.bytes, connections.max.idle.ms,
// group.initial.rebalance.delay.ms, group.min.session.timeout.ms,
// group.max.session.timeout.ms, offsets.retention.minutes,
// offsets.retention.check.interval.ms); group.stall.threshold.ms is
// strata's own.
//
// `strata server --check` reads the flags and the --config file and checks
// them exactly as a start does, through the same code (server_setup.go:
// settle builds the checked configuration a start then runs): listener,
// advertised and protocol settings, the TLS keystore and truststore
// loaded, the inter-broker password and admin token files read, the
// bucket URL parsed, the broker's, metadata node's, offload's and remote
// reader's configurations validated, the descriptor limits derived. It
// prints one line saying the configuration is valid (a JSON object with
// --json), or fails with the line and exit status a start would, and
// exits without binding a port, locking --data or reaching the bucket or
// the metadata peers: those a start alone finds out, as it does whether
// the data directory was first started with this --node-id. A config
// file a deployment renders is tested with it before it ships.
//
// The admin address serves /metrics (Prometheus), /healthz (the process
// runs), /readyz (the broker serves Kafka requests; 503 and the reason
// otherwise), /v1/cluster/status (the JSON `strata cluster status`
// prints, less the replication counts the command adds from Metadata),
// /v1/tier/status (offload's status, `strata tier status`; ?topic=T keeps
// one topic) and /v1/groups/{group}/lag (the lag `strata group describe`
// prints). A topic or group the broker does not know is 404
// with a message, a query parameter an endpoint does not take 400; none
// answers an empty document for what it cannot honour. SIGINT or SIGTERM
// shuts down in order: stop accepting, answer requests in flight, close
// partitions cleanly, stop the metadata node.
package main
