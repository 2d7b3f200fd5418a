-- How many times processing of a delivery was started. It is counted before the work
-- begins, so a process that dies while handling a delivery (an abort, an OOM kill)
-- still counts; a delivery that used up its attempts is marked failed, not resumed.
ALTER TABLE deliveries ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
