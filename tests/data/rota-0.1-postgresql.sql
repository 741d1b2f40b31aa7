-- The tables and indexes rota 0.1 made on PostgreSQL (Base.metadata.create_all), compiled
-- once from that release's models.py; tests/test_migrations.py loads it, then copies the rows
-- of rota-0.1.sqlite in, to test adopting such a database.

CREATE TABLE arrays (
	id BIGINT NOT NULL, 
	spec JSON NOT NULL, 
	tasks INTEGER NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE audit (
	id BIGSERIAL NOT NULL, 
	time FLOAT NOT NULL, 
	"user" VARCHAR(128) NOT NULL, 
	action VARCHAR(128) NOT NULL, 
	target TEXT NOT NULL, 
	peer VARCHAR(256) NOT NULL, 
	allowed BOOLEAN NOT NULL, 
	detail TEXT NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_audit_time ON audit (time);

CREATE TABLE gpu_marks (
	node VARCHAR(128) NOT NULL, 
	index INTEGER NOT NULL, 
	uuid VARCHAR(128) NOT NULL, 
	reason VARCHAR(512) NOT NULL, 
	since FLOAT NOT NULL, 
	marked_by VARCHAR(64) NOT NULL, 
	PRIMARY KEY (node, index)
);

CREATE TABLE jobs (
	id BIGSERIAL NOT NULL, 
	array_job_id BIGINT, 
	array_task_id INTEGER, 
	name VARCHAR(128) NOT NULL, 
	"user" VARCHAR(64) NOT NULL, 
	account VARCHAR(64) NOT NULL, 
	spec JSON NOT NULL, 
	state VARCHAR(16) NOT NULL, 
	reason VARCHAR(512) NOT NULL, 
	exit_code INTEGER, 
	attempt INTEGER NOT NULL, 
	submit_time FLOAT NOT NULL, 
	start_time FLOAT, 
	end_time FLOAT, 
	time_limit FLOAT NOT NULL, 
	held VARCHAR(8) NOT NULL, 
	allocation JSON, 
	stop_state VARCHAR(16) NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_jobs_array_task ON jobs (array_job_id, array_task_id);

CREATE INDEX ix_jobs_state ON jobs (state);

CREATE INDEX ix_jobs_user ON jobs ("user");

CREATE TABLE nodes (
	name VARCHAR(128) NOT NULL, 
	token_hash VARCHAR(128) NOT NULL, 
	labels JSON NOT NULL, 
	admin_state VARCHAR(16) NOT NULL, 
	reason VARCHAR(512) NOT NULL, 
	reason_by VARCHAR(64) NOT NULL, 
	reason_time FLOAT, 
	inventory JSON NOT NULL, 
	address VARCHAR(256) NOT NULL, 
	last_seen FLOAT, 
	PRIMARY KEY (name)
);

CREATE TABLE reservations (
	name VARCHAR(128) NOT NULL, 
	start FLOAT NOT NULL, 
	"end" FLOAT NOT NULL, 
	gpus JSON NOT NULL, 
	users JSON NOT NULL, 
	accounts JSON NOT NULL, 
	flags JSON NOT NULL, 
	lend BOOLEAN NOT NULL, 
	created_by VARCHAR(64) NOT NULL, 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (name)
);

CREATE INDEX ix_reservations_end ON reservations ("end");

CREATE TABLE submit_requests (
	request_id VARCHAR(128) NOT NULL, 
	"user" VARCHAR(64) NOT NULL, 
	job_ids JSON NOT NULL, 
	PRIMARY KEY (request_id)
);

CREATE TABLE users (
	name VARCHAR(128) NOT NULL, 
	admin BOOLEAN NOT NULL, 
	accounts JSON NOT NULL, 
	default_account VARCHAR(128) NOT NULL, 
	uid INTEGER, 
	gid INTEGER, 
	token_hash VARCHAR(128) NOT NULL, 
	revoked BOOLEAN NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (name)
);

CREATE INDEX ix_users_token_hash ON users (token_hash);

CREATE TABLE job_events (
	id BIGSERIAL NOT NULL, 
	job_id BIGINT NOT NULL, 
	time FLOAT NOT NULL, 
	attempt INTEGER NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	old_state VARCHAR(16) NOT NULL, 
	new_state VARCHAR(16) NOT NULL, 
	reason TEXT NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(job_id) REFERENCES jobs (id)
);

CREATE INDEX ix_job_events_job_id ON job_events (job_id);

CREATE TABLE job_usage (
	job_id BIGINT NOT NULL, 
	util_sum FLOAT NOT NULL, 
	samples INTEGER NOT NULL, 
	memory_peak BIGINT NOT NULL, 
	memory_total BIGINT NOT NULL, 
	PRIMARY KEY (job_id), 
	FOREIGN KEY(job_id) REFERENCES jobs (id)
);

CREATE TABLE notifications (
	job_id BIGINT NOT NULL, 
	url VARCHAR(2048) NOT NULL, 
	tries INTEGER NOT NULL, 
	next_at FLOAT NOT NULL, 
	PRIMARY KEY (job_id), 
	FOREIGN KEY(job_id) REFERENCES jobs (id)
);

CREATE INDEX ix_notifications_next_at ON notifications (next_at);
