/**
 * Numbered schema migrations of the PostgreSQL memory store. `setup()` applies
 * the ones missing from `memory_migrations`, in order, in one transaction under
 * an advisory lock (so concurrent starts do not race). Never edit a released
 * migration; add the next number.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS_TABLE_SQL = `
CREATE TABLE IF NOT EXISTS memory_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** Any constant works; it only has to be the same in every process. */
export const MIGRATION_LOCK_KEY = 'threadline.memory_migrations';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'threads, states, chunks, operations, checkpoints',
    sql: `
CREATE TABLE memory_threads (
  id text PRIMARY KEY,
  n bigserial NOT NULL,                      -- creation order, breaks ties of created_at
  user_id text NOT NULL,
  head_state_id text NOT NULL,
  last_seq integer NOT NULL,
  limits jsonb NOT NULL,
  forked_from jsonb,
  created_at timestamptz NOT NULL
);
CREATE INDEX memory_threads_by_user ON memory_threads (user_id, created_at DESC, n DESC);
CREATE INDEX memory_threads_by_time ON memory_threads (created_at DESC, n DESC);

-- A state is a snapshot of its chunk ids or one splice of its parent's (src/memory/state-delta.ts).
CREATE TABLE memory_states (
  id text PRIMARY KEY,
  n bigserial NOT NULL,                      -- commit order
  thread_id text NOT NULL REFERENCES memory_threads (id) ON DELETE CASCADE,
  parent_state_id text,
  seq integer NOT NULL,
  tokens integer NOT NULL,
  operation_id text,
  created_at timestamptz NOT NULL,
  snapshot jsonb,
  splice jsonb,
  CHECK ((snapshot IS NULL) <> (splice IS NULL))
);
CREATE INDEX memory_states_by_thread ON memory_states (thread_id, n);

-- thread_id is the thread that first stored the chunk; forks share it.
CREATE TABLE memory_chunks (
  id text PRIMARY KEY,
  n bigserial NOT NULL,
  thread_id text NOT NULL REFERENCES memory_threads (id) ON DELETE CASCADE,
  type text NOT NULL,
  content jsonb NOT NULL,
  priority integer NOT NULL,
  retention text NOT NULL,
  agent_modifiable boolean NOT NULL,
  parent_chunk_id text,
  provenance jsonb NOT NULL,
  message_id text,
  tokens integer NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX memory_chunks_by_message ON memory_chunks (message_id, n DESC) WHERE message_id IS NOT NULL;
CREATE INDEX memory_chunks_by_thread ON memory_chunks (thread_id);

CREATE TABLE memory_operations (
  id text PRIMARY KEY,
  thread_id text NOT NULL REFERENCES memory_threads (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  kind text NOT NULL,
  origin text NOT NULL,
  reason text NOT NULL,
  trigger_event text NOT NULL,
  run_id text,
  step_id text,
  operation jsonb,
  details jsonb,
  from_state_id text,
  to_state_id text NOT NULL,
  new_chunk_ids text[] NOT NULL,
  at timestamptz NOT NULL,
  UNIQUE (thread_id, seq)
);
CREATE INDEX memory_operations_by_origin ON memory_operations (thread_id, origin, seq);
CREATE INDEX memory_operations_by_kind ON memory_operations (thread_id, kind, seq);
CREATE INDEX memory_operations_by_run ON memory_operations (thread_id, run_id, seq) WHERE run_id IS NOT NULL;
CREATE INDEX memory_operations_by_time ON memory_operations (thread_id, at);

CREATE TABLE memory_checkpoints (
  operation_id text PRIMARY KEY REFERENCES memory_operations (id) ON DELETE CASCADE,
  thread_id text NOT NULL REFERENCES memory_threads (id) ON DELETE CASCADE,
  name text NOT NULL,
  state_id text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX memory_checkpoints_by_thread ON memory_checkpoints (thread_id, at);
`,
  },
  {
    version: 2,
    name: 'reads',
    sql: `
-- Records of reads (seed 001's audit of reads): appended in batches, never locking the thread row.
CREATE TABLE memory_reads (
  id text PRIMARY KEY,
  n bigserial NOT NULL,                      -- append order, breaks ties of at
  thread_id text NOT NULL REFERENCES memory_threads (id) ON DELETE CASCADE,
  target text NOT NULL,
  origin text NOT NULL,
  reason text NOT NULL,
  trigger_event text NOT NULL,
  run_id text,
  step_id text,
  state_id text NOT NULL,
  details jsonb,
  at timestamptz NOT NULL
);
CREATE INDEX memory_reads_by_time ON memory_reads (thread_id, at, n);
`,
  },
  {
    version: 3,
    name: 'long-term memory',
    sql: `
-- Seed 002's long-term memory (src/store/longterm/postgres-store.ts): every record of a user, by kind.
-- terms: the record's analyzed words (src/longterm/text.ts: folded, stopwords out, stemmed), indexed
-- with the 'simple' configuration so PostgreSQL ranks exactly the terms the embedded store ranks.
CREATE TABLE longterm_records (
  user_id text NOT NULL,
  kind text NOT NULL,
  id text NOT NULL,
  data jsonb NOT NULL,
  terms tsvector NOT NULL,
  names text[] NOT NULL DEFAULT '{}',        -- entities: normalized name and aliases
  subject_id text,                           -- facts
  object_id text,                            -- facts
  session_id text,                           -- summaries
  sort_at text,                              -- facts: recordedAt; episodes, summaries: at
  PRIMARY KEY (user_id, kind, id)
);
CREATE INDEX longterm_records_terms ON longterm_records USING gin (terms);
CREATE INDEX longterm_records_names ON longterm_records USING gin (names);
CREATE INDEX longterm_records_subject ON longterm_records (user_id, subject_id) WHERE kind = 'fact';
CREATE INDEX longterm_records_object ON longterm_records (user_id, object_id) WHERE kind = 'fact';
CREATE INDEX longterm_records_session ON longterm_records (user_id, session_id) WHERE kind = 'summary';
CREATE TABLE longterm_audit (
  n bigserial PRIMARY KEY,
  user_id text NOT NULL,
  entry jsonb NOT NULL
);
CREATE INDEX longterm_audit_by_user ON longterm_audit (user_id, n DESC);
`,
  },
  {
    version: 4,
    name: 'long-term dense vectors',
    sql: `
-- A record's dense vector (EMBEDDING_MODEL), unit length: similarity is a dot product, computed
-- over one user's rows (no pgvector needed). NULL when no embedder is configured or the call failed.
ALTER TABLE longterm_records ADD COLUMN embedding real[];
`,
  },
  {
    version: 5,
    name: 'long-term full-text index per kind',
    sql: `
-- One GIN index per kind: a search looks in one kind, and a term common among 95,000 messages
-- must not make a search of facts visit every message row it matches to drop it.
CREATE INDEX longterm_records_terms_message ON longterm_records USING gin (terms) WHERE kind = 'message';
CREATE INDEX longterm_records_terms_fact ON longterm_records USING gin (terms) WHERE kind = 'fact';
CREATE INDEX longterm_records_terms_entity ON longterm_records USING gin (terms) WHERE kind = 'entity';
CREATE INDEX longterm_records_terms_episode ON longterm_records USING gin (terms) WHERE kind = 'episode';
CREATE INDEX longterm_records_terms_summary ON longterm_records USING gin (terms) WHERE kind = 'summary';
DROP INDEX longterm_records_terms;
`,
  },
  {
    version: 6,
    name: 'long-term fuzzy entity names (pg_trgm)',
    sql: `
-- Names spelt alike ("Norah" for the entity "Nora"): one row per normalized name or alias of an
-- entity (the names column of its record). One GIN index over the user and the name's trigrams
-- (btree_gin for the user): a search reads only that user's names sharing trigrams with a phrase
-- (about a millisecond for 6,000 names, where similarity() over all of them took 300 ms). No other
-- index: a btree holding user_id would be scanned for the user's every name instead. No pending
-- list (fastupdate off): every search would read it through until a vacuum merged it. Rows are
-- replaced per entity inside the user's write section (its advisory lock), names already distinct.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE TABLE longterm_entity_names (
  user_id text NOT NULL,
  entity_id text NOT NULL,
  name text NOT NULL
);
CREATE INDEX longterm_entity_names_trgm ON longterm_entity_names USING gin (user_id, name gin_trgm_ops) WITH (fastupdate = off);
-- A user's entities whose best name has similarity() >= threshold (>= 0.3, the % operator's
-- cut fixed here) to one of the phrases. Its settings hold while it runs: the trigram index is the
-- plan whatever the statistics say (a table never analyzed looks small enough to scan whole).
CREATE FUNCTION longterm_similar_entities(user_key text, phrases text[], threshold real)
  RETURNS TABLE (entity_id text, similarity float8) LANGUAGE sql STABLE
  SET enable_seqscan = off SET pg_trgm.similarity_threshold = 0.3
AS $fn$
  SELECT c.entity_id, max(c.similarity) FROM unnest(phrases) AS p
  CROSS JOIN LATERAL (SELECT n.entity_id, similarity(n.name, p)::float8 AS similarity FROM longterm_entity_names n
                      WHERE n.user_id = user_key AND n.name % p OFFSET 0) c
  WHERE c.similarity >= threshold::float8 GROUP BY c.entity_id
$fn$;
INSERT INTO longterm_entity_names (user_id, entity_id, name)
  SELECT DISTINCT user_id, id, unnest(names) FROM longterm_records WHERE kind = 'entity';
`,
  },
  {
    version: 7,
    name: 'long-term BM25 statistics',
    sql: `
-- BM25 in PostgreSQL: ts_rank_cd has no inverse document frequency (a speaker's name, in half of
-- the turns, weighed what a rare word weighs). Per user and kind: how many records hold each index
-- term (as stored: a keyed hash when sealing is on), and how many records and terms there are.
-- The write section keeps both beside the rows, from the rows' own tsvectors.
CREATE TABLE longterm_term_stats (
  user_id text NOT NULL,
  kind text NOT NULL,
  term text NOT NULL,
  df integer NOT NULL,
  PRIMARY KEY (user_id, kind, term)
);
CREATE TABLE longterm_kind_stats (
  user_id text NOT NULL,
  kind text NOT NULL,
  docs bigint NOT NULL,
  terms bigint NOT NULL,
  PRIMARY KEY (user_id, kind)
);
INSERT INTO longterm_term_stats (user_id, kind, term, df)
  SELECT user_id, kind, t, count(*) FROM longterm_records, unnest(tsvector_to_array(terms)) AS t GROUP BY user_id, kind, t;
INSERT INTO longterm_kind_stats (user_id, kind, docs, terms)
  SELECT user_id, kind, count(*), coalesce(sum(length(terms)), 0) FROM longterm_records GROUP BY user_id, kind;
`,
  },
  {
    version: 8,
    name: 'API rate-limit counters',
    sql: `
-- Per-user request limits shared by every API process (src/api/rate-limit-store.ts): one row per
-- limit and caller, its hits in the current fixed window.
CREATE TABLE api_rate_limits (
  key text PRIMARY KEY,
  window_start timestamptz NOT NULL,
  hits integer NOT NULL
);
`,
  },
  {
    version: 9,
    name: 'long-term search without vacuum',
    sql: `
-- Long-term search stays fast right after a bulk import, before any (auto)vacuum has run.
-- A GIN index's pending list (fastupdate) is read through by every search until a vacuum merges it;
-- at the default 4 MB that was 5,000 facts and 4,400 messages, three quarters of a search's time
-- at 95,000 messages. 256 kB keeps the list short and the merge in batches (fastupdate off cut the
-- import rate by a third). What is pending now is merged here.
ALTER INDEX longterm_records_terms_message SET (gin_pending_list_limit = 256);
ALTER INDEX longterm_records_terms_fact SET (gin_pending_list_limit = 256);
ALTER INDEX longterm_records_terms_entity SET (gin_pending_list_limit = 256);
ALTER INDEX longterm_records_terms_episode SET (gin_pending_list_limit = 256);
ALTER INDEX longterm_records_terms_summary SET (gin_pending_list_limit = 256);
ALTER INDEX longterm_records_names SET (gin_pending_list_limit = 256);
SELECT gin_clean_pending_list(i) FROM unnest(ARRAY['longterm_records_terms_message', 'longterm_records_terms_fact', 'longterm_records_terms_entity',
  'longterm_records_terms_episode', 'longterm_records_terms_summary', 'longterm_records_names']::regclass[]) AS i;
-- Every write section updates the counts of its terms: room on each page lets an update stay on
-- its page (HOT), pruned as pages are read, instead of a new index entry per update that a lookup
-- walks past until a vacuum (95 import batches left 68,000 dead rows beside 7,000 live ones).
ALTER TABLE longterm_term_stats SET (fillfactor = 50);
ALTER TABLE longterm_kind_stats SET (fillfactor = 50);
`,
  },
  {
    version: 10,
    name: 'long-term search in fewer statements',
    sql: `
-- Names spelt alike: pg_trgm's % takes the caller's threshold (at least 0.3) instead of 0.3, so the
-- trigram index hands over only names that can pass it (a phrase of common trigrams matched
-- thousands at 0.3: 15 ms, 3 ms at 0.5); what it returns is unchanged. The SET clause restores
-- the setting when the function returns.
CREATE OR REPLACE FUNCTION longterm_similar_entities(user_key text, phrases text[], threshold real)
  RETURNS TABLE (entity_id text, similarity float8) LANGUAGE plpgsql STABLE
  SET enable_seqscan = off SET pg_trgm.similarity_threshold = 0.3
AS $fn$
BEGIN
  PERFORM set_config('pg_trgm.similarity_threshold', greatest(threshold, 0.3)::text, true);
  RETURN QUERY SELECT c.entity_id, max(c.similarity) FROM unnest(phrases) AS p
    CROSS JOIN LATERAL (SELECT n.entity_id, similarity(n.name, p)::float8 AS similarity FROM longterm_entity_names n
                        WHERE n.user_id = user_key AND n.name % p OFFSET 0) c
    WHERE c.similarity >= threshold::float8 GROUP BY c.entity_id;
END
$fn$;
-- The candidates of one BM25 search of a user's records of one kind, in one statement (the term
-- statistics, then the rows, were two round trips per kind and search; a caller asks for several
-- kinds in one statement with a lateral join). The caller gives every stored form of each query
-- term (forms[i] a form of its term form_terms[i]) and scores the rows itself
-- (src/store/longterm/bm25.ts, one definition of BM25). The first row holds the statistics: id
-- NULL, the kind's record and term counts, and the terms some row holds (term_index: positions in
-- the caller's terms), rarest first, with their record counts. Each later row is a candidate: its
-- length, per term in that order whether it holds it, and its record as text (the caller parses
-- only the few it ranks first). Candidates: rows with the rarest terms while their records
-- together stay within budget (always the rarest), and rows holding two of the other terms where
-- such pairs are expected in few rows (df × df / docs); at most max_rows.
CREATE FUNCTION longterm_lexical_candidates(user_key text, kind_key text, forms text[], form_terms int[], budget int, max_rows int)
  RETURNS TABLE (id text, len int, holds boolean[], docs bigint, total_terms bigint, term_index int[], dfs bigint[], data text)
  LANGUAGE plpgsql STABLE
AS $fn$
DECLARE
  n_docs bigint;
  n_terms bigint;
  t_index int[];
  t_df bigint[];
  t_query text[];
  clauses text[] := '{}';
  spent float8 := 0;
  generators int := 0;
  expected float8;
BEGIN
  SELECT s.docs, s.terms INTO n_docs, n_terms FROM longterm_kind_stats s WHERE s.user_id = user_key AND s.kind = kind_key;
  IF coalesce(n_docs, 0) <= 0 THEN RETURN; END IF;
  -- Per term: its record count over the forms some row holds, and those forms as a tsquery
  -- alternative (quoted, taken as they are: rows store their terms verbatim).
  SELECT array_agg(x.t ORDER BY x.n, x.t), array_agg(x.n ORDER BY x.n, x.t), array_agg(x.q ORDER BY x.n, x.t) INTO t_index, t_df, t_query
    FROM (SELECT f.t, sum(c.df)::bigint AS n, '(' || string_agg('''' || replace(f.form, '''', '''''') || '''', ' | ') || ')' AS q
            FROM unnest(forms, form_terms) AS f(form, t)
            CROSS JOIN LATERAL (SELECT s.df FROM longterm_term_stats s WHERE s.user_id = user_key AND s.kind = kind_key AND s.term = f.form AND s.df > 0 OFFSET 0) c
           GROUP BY f.t) x;
  IF t_index IS NULL THEN RETURN; END IF;
  FOR i IN 1 .. cardinality(t_index) LOOP
    EXIT WHEN generators > 0 AND spent + t_df[i] > budget;
    clauses := clauses || t_query[i];
    spent := spent + t_df[i];
    generators := i;
  END LOOP;
  FOR i IN generators + 1 .. cardinality(t_index) LOOP
    FOR j IN i + 1 .. cardinality(t_index) LOOP
      expected := t_df[i]::float8 * t_df[j] / n_docs;
      CONTINUE WHEN spent + expected > budget * 2;
      clauses := clauses || ('(' || t_query[i] || ' & ' || t_query[j] || ')');
      spent := spent + expected;
    END LOOP;
  END LOOP;
  RETURN QUERY SELECT NULL::text, NULL::int, NULL::boolean[], n_docs, n_terms, t_index, t_df, NULL::text;
  -- Literals, not parameters: the plan is made for this kind (its partial GIN index of migration 5);
  -- user_id || '' keeps the scan on that index rather than the primary key's rows of the user.
  RETURN QUERY EXECUTE format(
    'SELECT r.id, length(r.terms), ARRAY[%s], NULL::bigint, NULL::bigint, NULL::int[], NULL::bigint[], r.data::text FROM longterm_records r
      WHERE r.kind = %L AND r.terms @@ %L::tsquery AND r.user_id || '''' = %L LIMIT %s',
    (SELECT string_agg(format('r.terms @@ %L::tsquery', q), ', ' ORDER BY n) FROM unnest(t_query) WITH ORDINALITY AS u(q, n)),
    kind_key, array_to_string(clauses, ' | '), user_key, max_rows);
END
$fn$;
`,
  },
  {
    version: 11,
    name: 'long-term candidates when every query term is common',
    sql: `
-- Migration 10's candidates, but when the rarest query term alone is in more records than the
-- budget (every word of the query common: 1,700 rows read at 95,000 messages, most of a slow
-- search's time), its records that hold another query term come first: BM25 adds that term's
-- weight to them. Its records holding it alone only fill up to wanted (the caller's limit).
DROP FUNCTION longterm_lexical_candidates(text, text, text[], int[], int, int);
CREATE FUNCTION longterm_lexical_candidates(user_key text, kind_key text, forms text[], form_terms int[], budget int, max_rows int, wanted int)
  RETURNS TABLE (id text, len int, holds boolean[], docs bigint, total_terms bigint, term_index int[], dfs bigint[], data text)
  LANGUAGE plpgsql STABLE
AS $fn$
DECLARE
  n_docs bigint;
  n_terms bigint;
  t_index int[];
  t_df bigint[];
  t_query text[];
  clauses text[] := '{}';
  spent float8 := 0;
  generators int := 0;
  expected float8;
  common boolean;
  found_rows bigint;
  row_sql text := 'SELECT r.id, length(r.terms), ARRAY[%s], NULL::bigint, NULL::bigint, NULL::int[], NULL::bigint[], r.data::text FROM longterm_records r
                    WHERE r.kind = %L AND r.terms @@ %L::tsquery%s AND r.user_id || '''' = %L LIMIT %s';
  holds_sql text;
BEGIN
  SELECT s.docs, s.terms INTO n_docs, n_terms FROM longterm_kind_stats s WHERE s.user_id = user_key AND s.kind = kind_key;
  IF coalesce(n_docs, 0) <= 0 THEN RETURN; END IF;
  SELECT array_agg(x.t ORDER BY x.n, x.t), array_agg(x.n ORDER BY x.n, x.t), array_agg(x.q ORDER BY x.n, x.t) INTO t_index, t_df, t_query
    FROM (SELECT f.t, sum(c.df)::bigint AS n, '(' || string_agg('''' || replace(f.form, '''', '''''') || '''', ' | ') || ')' AS q
            FROM unnest(forms, form_terms) AS f(form, t)
            CROSS JOIN LATERAL (SELECT s.df FROM longterm_term_stats s WHERE s.user_id = user_key AND s.kind = kind_key AND s.term = f.form AND s.df > 0 OFFSET 0) c
           GROUP BY f.t) x;
  IF t_index IS NULL THEN RETURN; END IF;
  FOR i IN 1 .. cardinality(t_index) LOOP
    EXIT WHEN generators > 0 AND spent + t_df[i] > budget;
    clauses := clauses || t_query[i];
    spent := spent + t_df[i];
    generators := i;
  END LOOP;
  common := generators = 1 AND t_df[1] > budget AND cardinality(t_index) > 1;
  IF common THEN
    clauses[1] := '(' || t_query[1] || ' & (' || array_to_string(t_query[2:], ' | ') || '))';
  END IF;
  FOR i IN generators + 1 .. cardinality(t_index) LOOP
    FOR j IN i + 1 .. cardinality(t_index) LOOP
      expected := t_df[i]::float8 * t_df[j] / n_docs;
      CONTINUE WHEN spent + expected > budget * 2;
      clauses := clauses || ('(' || t_query[i] || ' & ' || t_query[j] || ')');
      spent := spent + expected;
    END LOOP;
  END LOOP;
  RETURN QUERY SELECT NULL::text, NULL::int, NULL::boolean[], n_docs, n_terms, t_index, t_df, NULL::text;
  holds_sql := (SELECT string_agg(format('r.terms @@ %L::tsquery', q), ', ' ORDER BY n) FROM unnest(t_query) WITH ORDINALITY AS u(q, n));
  RETURN QUERY EXECUTE format(row_sql, holds_sql, kind_key, array_to_string(clauses, ' | '), '', user_key, max_rows);
  GET DIAGNOSTICS found_rows = ROW_COUNT;
  IF common AND found_rows < wanted THEN
    RETURN QUERY EXECUTE format(row_sql, holds_sql, kind_key, t_query[1], format(' AND NOT r.terms @@ %L::tsquery', array_to_string(clauses, ' | ')), user_key, wanted - found_rows);
  END IF;
END
$fn$;
`,
  },
  {
    version: 12,
    name: "threads by the user's key",
    sql: `
-- listThreads finds one user's threads whatever the case of the id (lower(user_id)), which the index on
-- user_id could not serve: the query walked the time index or scanned the table, 30-110 ms at 500,000
-- threads against 0.1 ms with this one. Nothing else filters on user_id.
CREATE INDEX memory_threads_by_user_key ON memory_threads (lower(user_id), created_at DESC, n DESC);
DROP INDEX memory_threads_by_user;
`,
  },
  {
    version: 13,
    name: 'long-term facts newest first',
    sql: `
-- A user's newest facts (a memory pass shows 40 after every run) read from the index's head instead of
-- sorting all of them: 165-355 ms at 20,000 facts before.
CREATE INDEX longterm_facts_by_time ON longterm_records (user_id, sort_at DESC, id DESC) WHERE kind = 'fact';
`,
  },
  {
    version: 14,
    name: "long-term facts by their predicate's key",
    sql: `
-- A fact's recording compares it with its subject's open facts of the same predicate only (its key's
-- base, src/longterm/facts.ts). The predicate is inside the record, sealed when encrypted, so every open
-- fact of the subject was read and opened to keep a few: 270-324 ms for a subject of 20,000 facts. The
-- base is kept beside the record (a keyed hash when sealed, as the full-text terms are); facts stored
-- before this migration have none until PostgresLongTermStore.setup fills it in, and are read meanwhile.
-- The new index leads with the old one's columns, which it replaces.
ALTER TABLE longterm_records ADD COLUMN predicate_base text;
CREATE INDEX longterm_facts_by_subject_predicate ON longterm_records (user_id, subject_id, predicate_base) WHERE kind = 'fact';
CREATE INDEX longterm_facts_without_predicate_base ON longterm_records (user_id, id) WHERE kind = 'fact' AND predicate_base IS NULL;
DROP INDEX longterm_records_subject;
`,
  },
  {
    version: 15,
    name: 'long-term vectors numbered as written',
    sql: `
-- Dense search keeps a user's vectors in the process and reads only those written since its last read
-- (src/store/longterm/vector-cache.ts): scored in SQL, a search took 0.86 s over 20,000 vectors. A
-- vector's number comes from one sequence, taken under the user's write lock, so that a user's numbers
-- commit in order.
CREATE SEQUENCE longterm_vector_seq;
ALTER TABLE longterm_records ADD COLUMN vector_n bigint;
UPDATE longterm_records SET vector_n = nextval('longterm_vector_seq') WHERE embedding IS NOT NULL;
CREATE INDEX longterm_vectors_since ON longterm_records (user_id, kind, vector_n) WHERE vector_n IS NOT NULL;
`,
  },
];
