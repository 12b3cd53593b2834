// The SQL of PostgresSyncStore (postgres_sync_store.ts): the sync tables'
// migrations and the text of every statement the store and its row readers
// (_postgres_sync_rows.ts) run, each named by what it does. Parameters are
// numbered as the callers pass them.

/** The sync domain's tables, one migration a version: released steps are never edited. */
export const SYNC_MIGRATIONS: readonly string[] = [
  `CREATE TABLE sync_contexts (
     owner uuid PRIMARY KEY,
     head_serial integer NOT NULL,
     head_uuid uuid NOT NULL,
     head_created_at bigint NOT NULL,
     size integer NOT NULL);
   CREATE TABLE sync_revisions (
     owner uuid NOT NULL,
     serial integer NOT NULL,
     uuid uuid NOT NULL UNIQUE,
     created_at bigint NOT NULL,
     PRIMARY KEY (owner, serial));
   CREATE TABLE sync_changes (
     owner uuid NOT NULL,
     serial integer NOT NULL,
     seq integer NOT NULL,
     entity smallint NOT NULL,
     key text NOT NULL,
     prev jsonb,
     next jsonb,
     PRIMARY KEY (owner, serial, seq));
   CREATE TABLE sync_objects (
     owner uuid NOT NULL,
     entity smallint NOT NULL,
     key text NOT NULL,
     value jsonb,
     last_serial integer NOT NULL,
     PRIMARY KEY (owner, entity, key));
   CREATE INDEX sync_objects_last_serial ON sync_objects (owner, last_serial);
   CREATE TABLE sync_tickets (
     uuid uuid PRIMARY KEY,
     owner uuid NOT NULL,
     seq bigserial,
     client_serial bigint,
     status text NOT NULL,
     created_at bigint NOT NULL,
     status_changed_at bigint NOT NULL,
     errors jsonb NOT NULL,
     data jsonb,
     work jsonb);
   CREATE INDEX sync_tickets_work ON sync_tickets (owner, seq) WHERE work IS NOT NULL;
   CREATE INDEX sync_tickets_created_at ON sync_tickets (created_at);`,
  // 2: Idempotency-Key of patches, a day per user.
  `CREATE TABLE sync_idempotency (
     owner uuid NOT NULL,
     key text NOT NULL,
     fingerprint text NOT NULL,
     ticket jsonb NOT NULL,
     created_at bigint NOT NULL,
     PRIMARY KEY (owner, key));
   CREATE INDEX sync_idempotency_created_at ON sync_idempotency (created_at);`,
  // 3: a context's new head announced on the channel tributary_sync_revisions, in the commit's own
  // transaction (sent when it commits, never when it rolls back), whichever statement moved it.
  `CREATE FUNCTION sync_announce_head() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     PERFORM pg_notify('tributary_sync_revisions',
       NEW.owner::text || ' ' || NEW.head_serial || ' ' || NEW.head_uuid::text || ' ' || NEW.head_created_at);
     RETURN NULL;
   END $$;
   CREATE TRIGGER sync_contexts_announce AFTER UPDATE OF head_serial ON sync_contexts
     FOR EACH ROW WHEN (NEW.head_serial > OLD.head_serial) EXECUTE FUNCTION sync_announce_head();`,
];

/** Rows changed at most by one statement of a sweep, so that a sweep never holds locks for long. */
export const SWEEP_BATCH = 5000;

/** A context's row, unless the user has one: revision 1 is its head. */
export const CREATE_CONTEXT_SQL =
  "INSERT INTO sync_contexts (owner, head_serial, head_uuid, head_created_at, size) VALUES ($1, 1, $2, $3, 1) ON CONFLICT DO NOTHING";

/** A context's revision 1. */
export const CREATE_FIRST_REVISION_SQL =
  "INSERT INTO sync_revisions (owner, serial, uuid, created_at) VALUES ($1, 1, $2, $3)";

/** The change of revision 1: `me` made. */
export const CREATE_FIRST_CHANGE_SQL =
  "INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next) VALUES ($1, 1, 0, 0, $2, NULL, $3)";

/** The object of revision 1: `me`. */
export const CREATE_FIRST_OBJECT_SQL =
  "INSERT INTO sync_objects (owner, entity, key, value, last_serial) VALUES ($1, 0, $2, $3, 1)";

/** Objects a snapshot of the head lists. */
export const CONTEXT_SIZE_SQL = "SELECT size FROM sync_contexts WHERE owner = $1";

/** Objects changed after a revision (deleted ones too). */
export const CHANGED_SINCE_SQL =
  "SELECT count(*) AS count FROM sync_objects WHERE owner = $1 AND last_serial > $2";

/** A context's row, first when a context is deleted (a runner holding it finishes before the rest goes). */
export const DELETE_CONTEXT_SQL = "DELETE FROM sync_contexts WHERE owner = $1";

/** The rest of a deleted context, table by table, after its row. */
export const DELETE_OWNED_SQL: readonly string[] = [
  "sync_changes",
  "sync_objects",
  "sync_revisions",
  "sync_tickets",
  "sync_idempotency",
].map(
  (table) => `DELETE FROM ${table} WHERE owner = $1`,
);

/** Takes an idempotency key for a ticket ($1 owner, $2 key, $3 fingerprint, $4 ticket, $5 now), or takes over a key older than $6. */
export const TAKE_IDEMPOTENCY_KEY_SQL =
  `INSERT INTO sync_idempotency (owner, key, fingerprint, ticket, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (owner, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, ticket = EXCLUDED.ticket, created_at = EXCLUDED.created_at
         WHERE sync_idempotency.created_at < $6`;

/** An idempotency key taken before: its fingerprint, its first ticket, and that ticket's row as it is now. */
export const READ_IDEMPOTENCY_KEY_SQL =
  `SELECT k.fingerprint, k.ticket, (SELECT to_jsonb(t) FROM sync_tickets t WHERE t.uuid = (k.ticket->>'uuid')::uuid) AS now
         FROM sync_idempotency k WHERE k.owner = $1 AND k.key = $2`;

/** Queues work under a new ticket, unless the owner has no context or $6 tickets queued already. */
export const ENQUEUE_SQL =
  `INSERT INTO sync_tickets (uuid, owner, client_serial, status, created_at, status_changed_at, errors, work)
       SELECT $1, $2, $3, 'new', $4, $4, '[]', $5
       WHERE EXISTS (SELECT 1 FROM sync_contexts WHERE owner = $2)
         AND (SELECT count(*) FROM (SELECT 1 FROM sync_tickets WHERE owner = $2 AND work IS NOT NULL LIMIT $6) AS queued) < $6`;

/** Placing patches, the read: each owner's head, whether work is queued, and the objects its patch reads. */
export const PLACE_READ_SQL = `SELECT x.owner, x.head_serial, x.head_uuid, x.head_created_at,
         EXISTS (SELECT 1 FROM sync_tickets t WHERE t.owner = x.owner AND t.work IS NOT NULL) AS queued,
         (SELECT jsonb_agg(jsonb_build_array(entity, key, value, last_serial)) FROM (
            SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = x.owner AND entity IN (0, 2) AND value IS NOT NULL
            UNION ALL
            SELECT o.entity, o.key, o.value, o.last_serial
            FROM unnest($2::uuid[], $3::smallint[], $4::text[]) AS named(owner, entity, key) CROSS JOIN LATERAL (
              SELECT entity, key, value, last_serial FROM sync_objects
              WHERE owner = named.owner AND entity = named.entity AND key = named.key LIMIT 1) AS o
            WHERE named.owner = x.owner) AS read) AS objects
       FROM sync_contexts x WHERE x.owner = ANY($1::uuid[])`;

/** Placing patches, the write: one statement, one commit (see PostgresSyncStore's #tryPlace). */
export const PLACE_WRITE_SQL =
  `WITH k AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::bigint[], $6::jsonb[], $7::integer[])
                    AS k(uuid, owner, client_serial, status, at, errors, expected)),
         l AS (SELECT x.owner FROM sync_contexts x JOIN k ON k.owner = x.owner
               WHERE x.head_serial = k.expected AND NOT EXISTS (SELECT 1 FROM sync_tickets t WHERE t.owner = x.owner AND t.work IS NOT NULL)
               ORDER BY x.owner FOR UPDATE OF x),
         u AS (SELECT * FROM unnest($8::uuid[], $9::integer[], $10::uuid[], $11::bigint[], $12::integer[])
                    AS u(owner, serial, uuid, created_at, size_delta) WHERE owner IN (SELECT owner FROM l)),
         h AS (UPDATE sync_contexts x SET head_serial = u.serial, head_uuid = u.uuid, head_created_at = u.created_at, size = x.size + u.size_delta
               FROM u WHERE x.owner = u.owner),
         r AS (INSERT INTO sync_revisions (owner, serial, uuid, created_at) SELECT owner, serial, uuid, created_at FROM u),
         c AS (INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next)
               SELECT * FROM unnest($13::uuid[], $14::integer[], $15::integer[], $16::smallint[], $17::text[], $18::jsonb[], $19::jsonb[])
                 AS c(owner, serial, seq, entity, key, prev, next) WHERE owner IN (SELECT owner FROM l)),
         o AS (INSERT INTO sync_objects (owner, entity, key, value, last_serial)
               SELECT * FROM unnest($20::uuid[], $21::smallint[], $22::text[], $23::jsonb[], $24::integer[])
                 AS o(owner, entity, key, value, last_serial) WHERE owner IN (SELECT owner FROM l)
               ON CONFLICT (owner, entity, key) DO UPDATE SET value = EXCLUDED.value, last_serial = EXCLUDED.last_serial),
         t AS (INSERT INTO sync_tickets (uuid, owner, client_serial, status, created_at, status_changed_at, errors, work)
               SELECT uuid, owner, client_serial, status, at, at, errors, NULL FROM k WHERE owner IN (SELECT owner FROM l))
       SELECT owner FROM l`;

/** Whether an owner has queued work. */
export const QUEUED_WORK_SQL =
  "SELECT 1 FROM sync_tickets WHERE owner = $1 AND work IS NOT NULL LIMIT 1";

/** Claims up to $3 of an owner's queued tickets under its advisory lock ($2), with the head and the objects their patches read. */
export const CLAIM_WORK_SQL = `WITH claimed AS (
               SELECT t.*, x.head_serial, x.head_uuid, x.head_created_at FROM sync_tickets t JOIN sync_contexts x ON x.owner = t.owner
               WHERE t.owner = $1 AND t.work IS NOT NULL AND pg_try_advisory_xact_lock(hashtext($2))
               ORDER BY t.seq LIMIT $3 FOR UPDATE),
             named AS (
               SELECT 1 AS entity, jsonb_array_elements(work->'patch'->'objects'->'messages')->>'uuid' AS key FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 1, jsonb_array_elements_text(work->'patch'->'deleted_objects'->'messages') FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 2, jsonb_array_elements(work->'patch'->'objects'->'teams')->>'uuid' FROM claimed WHERE work->>'kind' = 'patch'
               UNION
               SELECT 2, jsonb_array_elements_text(work->'patch'->'deleted_objects'->'teams') FROM claimed WHERE work->>'kind' = 'patch')
             SELECT claimed.*, (SELECT head_serial FROM sync_contexts WHERE owner = $1) AS seen_serial, (SELECT jsonb_agg(jsonb_build_array(entity, key, value, last_serial)) FROM (
                 SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity IN (0, 2) AND value IS NOT NULL
                 UNION ALL
                 SELECT o.entity, o.key, o.value, o.last_serial FROM named CROSS JOIN LATERAL (
                   SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity = named.entity AND key = named.key LIMIT 1) AS o) AS read
               ) AS objects
             FROM claimed ORDER BY seq`;

/** Owners with queued work. */
export const WAITING_OWNERS_SQL = "SELECT DISTINCT owner FROM sync_tickets WHERE work IS NOT NULL";

/** A ticket by id. */
export const TICKET_SQL = "SELECT * FROM sync_tickets WHERE uuid = $1";

// A revision is pruned once its successor is older than the retention (it stopped being the
// head that long ago). Its row stays, so that its id answers "expired" for good. The sweeps
// change SWEEP_BATCH rows a statement at most, and run again until fewer are changed.

/** Changes of pruned revisions ($1: the time before which a revision's successor prunes it): no retained base needs them. */
export const SWEEP_CHANGES_SQL = `DELETE FROM sync_changes WHERE ctid IN (
          SELECT c.ctid FROM sync_changes c
          JOIN sync_revisions n ON n.owner = c.owner AND n.serial = c.serial + 1
          WHERE n.created_at < $1 LIMIT ${SWEEP_BATCH})`;

/** Deleted keys last changed in a pruned revision: no retained base counts them. */
export const SWEEP_OBJECTS_SQL = `DELETE FROM sync_objects WHERE ctid IN (
          SELECT o.ctid FROM sync_objects o
          JOIN sync_revisions n ON n.owner = o.owner AND n.serial = o.last_serial + 1
          WHERE o.value IS NULL AND n.created_at < $1 LIMIT ${SWEEP_BATCH})`;

/** Tickets a patch queued while its account was being deleted (its insert saw the context before the delete committed). */
export const SWEEP_ORPHAN_TICKETS_SQL = `DELETE FROM sync_tickets WHERE ctid IN (
          SELECT t.ctid FROM sync_tickets t WHERE NOT EXISTS (SELECT 1 FROM sync_contexts x WHERE x.owner = t.owner) LIMIT ${SWEEP_BATCH})`;

/** Idempotency keys older than $1. */
export const SWEEP_IDEMPOTENCY_SQL = `DELETE FROM sync_idempotency WHERE ctid IN (
          SELECT ctid FROM sync_idempotency WHERE created_at < $1 LIMIT ${SWEEP_BATCH})`;

/** Results of tickets created before $1 (past their retention). */
export const SWEEP_TICKET_DATA_SQL = `UPDATE sync_tickets SET data = NULL WHERE ctid IN (
          SELECT ctid FROM sync_tickets WHERE created_at < $1 AND data IS NOT NULL LIMIT ${SWEEP_BATCH})`;

/** Tickets created before $1 (forgotten) with no work queued. */
export const SWEEP_TICKETS_SQL = `DELETE FROM sync_tickets WHERE ctid IN (
          SELECT ctid FROM sync_tickets WHERE created_at < $1 AND work IS NULL LIMIT ${SWEEP_BATCH})`;

/** Ends a queued ticket ($1) with its status, errors, data and time. */
export const END_TICKET_SQL =
  "UPDATE sync_tickets SET status = $2, errors = $3, data = $4, work = NULL, status_changed_at = $5 WHERE uuid = $1";

/** The ids of an owner's revisions by serial. */
export const CONFLICT_REVISIONS_SQL =
  "SELECT serial, uuid FROM sync_revisions WHERE owner = $1 AND serial = ANY($2::integer[])";

/**
 * Appends a revision after the locked head in one statement: the revision ($1 owner, $2 serial,
 * $3 id, $4 time), its changes ($5 to $9), the objects' new values ($10 to $12), the context's head
 * and size ($13 the change in size) and, when `endsTicket`, its queued ticket's end ($14 the ticket,
 * $15 the time).
 * @param endsTicket whether the statement ends a queued ticket too
 * @returns the statement
 */
export function commitRevisionSql(endsTicket: boolean): string {
  const endTicket = endsTicket
    ? `, t AS (UPDATE sync_tickets SET status = 'done', errors = '[]', data = NULL, work = NULL, status_changed_at = $15 WHERE uuid = $14)`
    : "";
  return `WITH r AS (INSERT INTO sync_revisions (owner, serial, uuid, created_at) VALUES ($1, $2, $3, $4)),
         c AS (INSERT INTO sync_changes (owner, serial, seq, entity, key, prev, next)
               SELECT $1, $2, * FROM unnest($5::integer[], $6::smallint[], $7::text[], $8::jsonb[], $9::jsonb[])),
         o AS (INSERT INTO sync_objects (owner, entity, key, value, last_serial)
               SELECT $1, e, k, v, $2 FROM unnest($10::smallint[], $11::text[], $12::jsonb[]) AS u(e, k, v)
               ON CONFLICT (owner, entity, key) DO UPDATE SET value = EXCLUDED.value, last_serial = EXCLUDED.last_serial)${endTicket}
       UPDATE sync_contexts SET head_serial = $2, head_uuid = $3, head_created_at = $4, size = size + $13 WHERE owner = $1`;
}

/** A revision of an owner by id, with when its successor was made (null for the head). */
export const RESOLVE_REVISION_SQL =
  `SELECT r.serial, r.created_at, n.created_at AS ended_at FROM sync_revisions r
       LEFT JOIN sync_revisions n ON n.owner = r.owner AND n.serial = r.serial + 1
       WHERE r.uuid = $1 AND r.owner = $2`;

/**
 * The objects a patch's view reads ($1 the owner, $2 and $3 the named entities and keys), each part
 * through the primary key: the cost follows the patch and the teams, not the messages kept (LIMIT 1,
 * at most one row by the key anyway, keeps the look-up a nested loop: never a hash over every message).
 * Deleted keys the patch names come too: their last change tells a retried deletion and a conflict.
 */
export const VIEW_OBJECTS_SQL =
  `SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity IN (0, 2) AND value IS NOT NULL
     UNION ALL
     SELECT o.entity, o.key, o.value, o.last_serial FROM unnest($2::smallint[], $3::text[]) AS named(entity, key) CROSS JOIN LATERAL (
       SELECT entity, key, value, last_serial FROM sync_objects WHERE owner = $1 AND entity = named.entity AND key = named.key LIMIT 1) AS o`;

/** A context's head, its row locked for the rest of the transaction. */
export const LOCK_CONTEXT_SQL =
  "SELECT head_serial, head_uuid, head_created_at FROM sync_contexts WHERE owner = $1 FOR UPDATE";

/** A context's head. */
export const HEAD_SQL =
  "SELECT head_serial, head_uuid, head_created_at FROM sync_contexts WHERE owner = $1";

/** An owner's current objects. */
export const SNAPSHOT_OBJECTS_SQL =
  "SELECT entity, key, value FROM sync_objects WHERE owner = $1 AND value IS NOT NULL";

/** Each key's first change after a revision: what the key was at the revision. */
export const UNDONE_CHANGES_SQL =
  `SELECT DISTINCT ON (entity, key) entity, key, prev FROM sync_changes
       WHERE owner = $1 AND serial > $2 ORDER BY entity, key, serial, seq`;

/** The changes after one revision up to another, in order. */
export const DIFF_CHANGES_SQL =
  "SELECT entity, key, prev, next FROM sync_changes WHERE owner = $1 AND serial > $2 AND serial <= $3 ORDER BY serial, seq";
