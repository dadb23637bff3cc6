-- actors and repositories fill their pages only half way, so that an entity seen again can be
-- rewritten on its own page as a heap-only tuple (HOT): no new entry in any of the table's
-- indexes, and the previous version pruned in place the next time the page is touched. Every
-- writer rewrites an entity each time it sees it again (last seen, latest event, identity), and
-- with full pages each of those rewrites moved the row to a new page and added an entry to every
-- index. Measured on the import bench's 1,000,000 envelopes (60,000 actors and 80,000
-- repositories, rewritten in each of four windows): the entity upserts of an import and its
-- replay took 19-22 s at the default of 100 (all but 0.05 % of the updates moving the row) and
-- 7-8 s at 50, every update heap-only; the two tables ended at 80 MB instead of 209 MB, the
-- pruned versions' room being reused (70: 17-20 % of the updates not heap-only, 124 MB). Rows
-- already stored keep their pages until rewritten.
ALTER TABLE actors SET (fillfactor = 50);
ALTER TABLE repositories SET (fillfactor = 50);
