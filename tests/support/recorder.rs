//! A plain HTTP listener on 127.0.0.1 standing for a stranger's server: it records the
//! head of every request it receives (so a test can say that cascade's token, or any
//! request at all, never reached it) and answers each with a fixed response.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

enum Answer {
    NotFound,
    Redirect(String),
    Hang,
}

/// The listener; requests are recorded until it is dropped (the thread then ends with
/// the next connection, or the process).
pub struct Recorder {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    /// Answers every request `404 Not Found`.
    pub fn not_found() -> Recorder {
        Recorder::start(Answer::NotFound)
    }

    /// Answers every request with a `302` to `location` followed by the request's path.
    pub fn redirecting_to(location: &str) -> Recorder {
        Recorder::start(Answer::Redirect(location.to_string()))
    }

    /// Never answers (each connection is held for 30 s).
    pub fn hanging() -> Recorder {
        Recorder::start(Answer::Hang)
    }

    fn start(answer: Answer) -> Recorder {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                seen.lock().unwrap().push(head);
                let (status, location) = match &answer {
                    Answer::NotFound => ("404 Not Found", String::new()),
                    Answer::Redirect(to) => ("302 Found", format!("Location: {to}{path}\r\n")),
                    Answer::Hang => {
                        std::thread::sleep(std::time::Duration::from_secs(30));
                        continue;
                    }
                };
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\n{location}Content-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                );
            }
        });
        Recorder { url, heads }
    }

    /// Every request head received so far, oldest first.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// Whether any request carried an `Authorization` header.
    pub fn saw_credentials(&self) -> bool {
        self.heads().iter().any(|h| {
            h.lines()
                .any(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        })
    }
}
