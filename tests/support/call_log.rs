//! A log the tests' stand-in tools write to over loopback. The sandbox lets a
//! tool write only its unit's own directory, but the network is open, so a
//! stand-in that records its calls across units and processes sends each line
//! to this collector (bash's `/dev/tcp`), which appends it to a file the test
//! reads and answers once it is written, so the line is there when the tool
//! goes on. The answer can carry what the test wants the tool to do (how long
//! to sleep), since the tool cannot read the test's files either.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

pub struct CallLog {
    port: u16,
    path: PathBuf,
}

impl CallLog {
    /// A collector appending to `path`, for as long as the test process lives.
    pub fn start(path: &Path) -> CallLog {
        CallLog::answering(path, |_| "ok".to_string())
    }

    /// [`CallLog::start`], answering each line with what `answer` says of it.
    pub fn answering(
        path: &Path,
        answer: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> CallLog {
        let answer = std::sync::Arc::new(answer);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let file = path.to_path_buf();
        let lock = std::sync::Arc::new(std::sync::Mutex::new(()));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (file, lock, answer) = (file.clone(), lock.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) > 0 {
                        let _held = lock.lock().unwrap();
                        let mut out = std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(&file)
                            .unwrap();
                        out.write_all(line.as_bytes()).unwrap();
                    }
                    let reply = answer(line.trim_end());
                    let _ = (&stream).write_all(format!("{reply}\n").as_bytes());
                });
            }
        });
        CallLog {
            port,
            path: path.to_path_buf(),
        }
    }

    /// A bash function `log_call LINE…` that sends one line, waits for it to
    /// be written and leaves the answer in `$CALL_REPLY`.
    pub fn bash_function(&self) -> String {
        format!(
            "log_call() {{ exec 9<>/dev/tcp/127.0.0.1/{}; echo \"$*\" >&9; read -r CALL_REPLY <&9; exec 9>&-; }}\n",
            self.port
        )
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
